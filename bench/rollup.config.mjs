// Bench bundles (SPEC §19) into dist/bench/, served as the reference server's static root so the
// page, both workers and the API share one origin:
//   outbox-sw.js  — our engine (createOutboxEngine + restHandler) with the bench hooks;
//   workbox-sw.js — workbox-background-sync's Queue replaying the same requests;
//   page.js + index.html — the bench page.
// `npm run bench` builds these itself: rollup -c bench/rollup.config.mjs
import { readFileSync } from 'node:fs';
import nodeResolve from '@rollup/plugin-node-resolve';
import replace from '@rollup/plugin-replace';
import esbuild from 'rollup-plugin-esbuild';

const extensions = ['.ts', '.mjs', '.js', '.json'];

/** Dependencies' own circular imports and comment placement are theirs to fix, not ours to read. */
function onwarn(warning, warn) {
  const inDeps = (id) => typeof id === 'string' && id.includes('node_modules');
  if (warning.code === 'CIRCULAR_DEPENDENCY' && (warning.ids ?? []).every(inDeps)) return;
  if (warning.code === 'INVALID_ANNOTATION' && inDeps(warning.id)) return;
  warn(warning);
}

/** Emits the bench page's HTML next to its script. */
function html(path) {
  return {
    name: 'bench-html',
    generateBundle() {
      this.emitFile({ type: 'asset', fileName: 'index.html', source: readFileSync(path) });
    },
  };
}

const bundle = (input, file, extra = []) => ({
  input,
  onwarn,
  plugins: [
    nodeResolve({ extensions, browser: true }),
    // workbox reads process.env.NODE_ENV; production drops its dev-only logging and asserts.
    replace({
      preventAssignment: true,
      values: { 'process.env.NODE_ENV': JSON.stringify('production') },
    }),
    esbuild({ target: 'es2022', tsconfig: 'tsconfig.json', minify: true }),
    ...extra,
  ],
  output: { file, format: 'es', inlineDynamicImports: true },
});

export default [
  bundle('bench/browser/app/outbox-sw.ts', 'dist/bench/outbox-sw.js'),
  bundle('bench/browser/app/workbox-sw.ts', 'dist/bench/workbox-sw.js'),
  bundle('bench/browser/app/page.ts', 'dist/bench/page.js', [html('bench/browser/app/index.html')]),
];
