// Builds (SPEC §1, STYLE "Build like a library"):
//   lib    — dist/{sw,client,shared,wire}/index.js: the `sw-outbox` package's ESM builds,
//            dependencies left external;
//   e2e    — dist/e2e/: the bundled test worker (module and classic), test page and v0 fixture
//            (never packed: `files` in package.json lists what ships);
//   server — server/dist/{index,cli}.js: the `sw-outbox-server` package for Node, its
//            dependencies (the library's `sw-outbox/wire` among them) left external.
// Choose with SW_OUTBOX_BUILD=lib,e2e,server (default: all). Every output prints a size line.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, relative } from 'node:path';
import { gzipSync } from 'node:zlib';
import nodeResolve from '@rollup/plugin-node-resolve';
import replace from '@rollup/plugin-replace';
import esbuild from 'rollup-plugin-esbuild';

const targets = new Set((process.env.SW_OUTBOX_BUILD ?? 'lib,e2e,server').split(','));
const extensions = ['.ts', '.mjs', '.js', '.json'];

/** Prints `path  size  gzip` for every file written, so bundle growth is visible in the build log. */
function bundleSize() {
  return {
    name: 'bundle-size',
    writeBundle(options, bundle) {
      const dir = options.dir ?? (options.file ? join(options.file, '..') : '.');
      for (const [fileName, output] of Object.entries(bundle)) {
        if (fileName.endsWith('.map')) continue;
        const code = output.type === 'chunk' ? output.code : output.source;
        const size = Buffer.byteLength(code);
        const gzip = gzipSync(code).length;
        const path = relative(process.cwd(), join(dir, fileName));
        console.log(`${path.padEnd(44)} ${kb(size).padStart(9)}  gzip ${kb(gzip).padStart(9)}`);
      }
    },
  };
}
const kb = (bytes) => `${(bytes / 1024).toFixed(1)} kB`;

/** Copies a folder's static files (HTML) next to the bundles. */
function copyStatic(from) {
  return {
    name: 'copy-static',
    generateBundle() {
      const walk = (dir) =>
        readdirSync(dir).flatMap((name) => {
          const path = join(dir, name);
          return statSync(path).isDirectory() ? walk(path) : [path];
        });
      for (const path of walk(from)) {
        this.emitFile({
          type: 'asset',
          fileName: relative(from, path),
          source: readFileSync(path),
        });
      }
    },
  };
}

/** Dependencies' own circular imports and comment placement are theirs to fix, not ours to read. */
function onwarn(warning, warn) {
  const inDeps = (id) => typeof id === 'string' && id.includes('node_modules');
  if (warning.code === 'CIRCULAR_DEPENDENCY' && (warning.ids ?? []).every(inDeps)) return;
  if (warning.code === 'INVALID_ANNOTATION' && inDeps(warning.id)) return;
  warn(warning);
}

const typescript = () => esbuild({ target: 'es2022', tsconfig: 'tsconfig.json', sourceMap: true });
// workbox reads process.env.NODE_ENV, which esbuild's define does not reach inside node_modules.
const nodeEnv = () =>
  replace({
    preventAssignment: true,
    values: { 'process.env.NODE_ENV': JSON.stringify('production') },
  });

const dependenciesOf = (manifest) =>
  Object.keys(JSON.parse(readFileSync(manifest, 'utf8')).dependencies ?? {});
const dependencyTest = (names) => (id) =>
  names.some((dep) => id === dep || id.startsWith(`${dep}/`));
const isDependency = dependencyTest(dependenciesOf('package.json'));
const isServerDependency = dependencyTest(dependenciesOf('server/package.json'));
const isNodeBuiltin = (id) => id.startsWith('node:') || builtinModules.includes(id);

const lib = {
  input: Object.fromEntries(
    [
      ...['sw', 'client', 'shared']
        .filter((name) => existsSync(`${name}/index.ts`))
        .map((name) => [`${name}/index`, `${name}/index.ts`]),
      // `sw-outbox/wire`: the protocol constants and header codecs a server needs, nothing else.
      ['wire/index', 'shared/wire/protocol.ts'],
    ],
  ),
  external: isDependency,
  onwarn,
  plugins: [nodeResolve({ extensions }), typescript(), bundleSize()],
  output: { dir: 'dist', format: 'es', sourcemap: true, chunkFileNames: 'chunks/[name]-[hash].js' },
};

/** A fully bundled browser build (the e2e worker and pages bundle every dependency). */
const browser = (input, file, format = 'es') => ({
  input,
  onwarn,
  plugins: [nodeResolve({ extensions, browser: true }), nodeEnv(), typescript(), bundleSize()],
  // One file per bundle: the page sender's lazy import is inlined here (apps that bundle the
  // library get it as a separate chunk).
  output: { file, format, sourcemap: true, inlineDynamicImports: true },
});

const e2e = [
  browser('e2e/app/sw.ts', 'dist/e2e/sw.js'),
  browser('e2e/app/sw.ts', 'dist/e2e/sw-classic.js', 'iife'),
  {
    ...browser('e2e/app/page.ts', 'dist/e2e/app.js'),
    plugins: [...browser().plugins, copyStatic('e2e/static')],
  },
  browser('e2e/legacy/v0.ts', 'dist/e2e/legacy/v0.js', 'iife'),
];

const server = {
  input: { index: 'server/index.ts', cli: 'server/cli.ts' },
  external: (id) => isServerDependency(id) || isNodeBuiltin(id),
  plugins: [nodeResolve({ extensions, preferBuiltins: true }), typescript(), bundleSize()],
  output: {
    dir: 'server/dist',
    format: 'es',
    sourcemap: true,
    chunkFileNames: '[name]-[hash].js',
    // The package's `bin` runs cli.js directly.
    banner: (chunk) => (chunk.name === 'cli' ? '#!/usr/bin/env node' : ''),
  },
};

export default [
  ...(targets.has('lib') ? [lib] : []),
  ...(targets.has('e2e') ? e2e : []),
  ...(targets.has('server') ? [server] : []),
];
