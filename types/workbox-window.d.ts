/**
 * workbox-window's ES2017 build (its package.json names it the primary build), which
 * client/registration.ts imports instead of the ES5 `module` build: the same class at about half
 * the bytes on the page's first load (SPEC §22). Its types are the package's own.
 */
declare module 'workbox-window/build/workbox-window.prod.mjs' {
  export { Workbox } from 'workbox-window';
}
