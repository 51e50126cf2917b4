// The demo PWA (SPEC §16): dist/demo/ holds the page bundle, the service worker (a classic
// script, so every browser with service workers can run it), the static files and the icons.
// Run with `rollup -c demo/rollup.config.mjs`; `npm start` does it through demo/build.mjs.
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { gzipSync } from 'node:zlib';
import nodeResolve from '@rollup/plugin-node-resolve';
import replace from '@rollup/plugin-replace';
import esbuild from 'rollup-plugin-esbuild';
import { demoIcons } from './icons.mjs';

const OUT = process.env.DEMO_OUT ?? 'dist/demo';
const STATIC = ['index.html', 'styles.css', 'manifest.webmanifest', 'icon.svg'];
const extensions = ['.ts', '.mjs', '.js', '.json'];
// A new value on every build makes the worker script differ, so browsers install the new shell.
const BUILD = new Date().toISOString();

/** Prints `path  size  gzip` for each output, so bundle growth is visible. */
function bundleSize() {
  return {
    name: 'bundle-size',
    writeBundle(options, bundle) {
      const dir = options.dir ?? join(options.file, '..');
      for (const [fileName, output] of Object.entries(bundle)) {
        if (fileName.endsWith('.map')) continue;
        const code = output.type === 'chunk' ? output.code : output.source;
        const kb = (bytes) => `${(bytes / 1024).toFixed(1)} kB`.padStart(9);
        const path = relative(process.cwd(), join(dir, fileName)).padEnd(28);
        console.log(`${path} ${kb(Buffer.byteLength(code))}  gzip ${kb(gzipSync(code).length)}`);
      }
    },
  };
}

function copyStatic() {
  return {
    name: 'demo-static',
    generateBundle() {
      for (const fileName of STATIC) {
        this.emitFile({ type: 'asset', fileName, source: readFileSync(join('demo', fileName)) });
      }
    },
  };
}

/** Dependencies' own circular imports and comment placement are theirs to fix. */
function onwarn(warning, warn) {
  const inDeps = (id) => typeof id === 'string' && id.includes('node_modules');
  if (warning.code === 'CIRCULAR_DEPENDENCY' && (warning.ids ?? []).every(inDeps)) return;
  if (warning.code === 'INVALID_ANNOTATION' && inDeps(warning.id)) return;
  warn(warning);
}

const plugins = () => [
  nodeResolve({ extensions, browser: true }),
  // workbox reads process.env.NODE_ENV, which esbuild's define does not reach in node_modules.
  replace({
    preventAssignment: true,
    values: {
      'process.env.NODE_ENV': JSON.stringify('production'),
      __DEMO_BUILD__: JSON.stringify(BUILD),
    },
  }),
  esbuild({ target: 'es2022', tsconfig: 'tsconfig.json', sourceMap: true, minify: true }),
];

export default [
  {
    input: 'demo/app/main.ts',
    onwarn,
    plugins: [...plugins(), copyStatic(), demoIcons(), bundleSize()],
    output: {
      file: join(OUT, 'app.js'),
      format: 'es',
      sourcemap: true,
      inlineDynamicImports: true,
    },
  },
  {
    input: 'demo/sw/main.ts',
    onwarn,
    plugins: [...plugins(), bundleSize()],
    output: { file: join(OUT, 'sw.js'), format: 'iife', sourcemap: true },
  },
];
