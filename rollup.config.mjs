// Builds (SPEC §1, STYLE "Build like a library"):
//   lib    — dist/{sw,client,shared,wire}/index.js: the `sw-outbox` package's ESM builds,
//            dependencies left external;
//   e2e    — dist/e2e/: the bundled test worker (module and classic), test page and v0 fixture
//            (never packed: `files` in package.json lists what ships);
//   server — server/dist/{index,cli,verify,kit,kit-*}.js: the `sw-outbox-server` package for Node, its
//            dependencies (the library's `sw-outbox/wire` among them) left external.
//   size   — dist/size/: the smallest real worker and page (tests/package/size/), bundled from
//            the built package with every dependency and minified, as an app ships them; it
//            prints their brotli sizes against the budgets of SPEC §22 (tests/package checks them).
// Choose with SW_OUTBOX_BUILD=lib,e2e,server,size (default: all). Every output prints a size line;
// SW_OUTBOX_SIZE_MODULES=1 (`npm run size -- --modules`) also prints what each module and each
// package adds to the size bundles; SW_OUTBOX_SIZE_WITHOUT=a,b (`npm run size -- --without a,b`)
// measures them with those modules left out.
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, relative } from 'node:path';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import nodeResolve from '@rollup/plugin-node-resolve';
import replace from '@rollup/plugin-replace';
import { transform } from 'esbuild';
import esbuild from 'rollup-plugin-esbuild';

const targets = new Set((process.env.SW_OUTBOX_BUILD ?? 'lib,e2e,server,size').split(','));
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

const dependenciesOf = (manifest) => {
  const { dependencies, peerDependencies } = JSON.parse(readFileSync(manifest, 'utf8'));
  return Object.keys({ ...dependencies, ...peerDependencies });
};
const dependencyTest = (names) => (id) =>
  names.some((dep) => id === dep || id.startsWith(`${dep}/`));
const isDependency = dependencyTest(dependenciesOf('package.json'));
const isServerDependency = dependencyTest(dependenciesOf('server/package.json'));
const isNodeBuiltin = (id) => id.startsWith('node:') || builtinModules.includes(id);

const lib = {
  input: [
    ...['sw', 'client', 'shared']
      .filter((name) => existsSync(`${name}/index.ts`))
      .map((name) => `${name}/index.ts`),
    // `sw-outbox/wire`: the protocol constants and header codecs a server needs, nothing else.
    'shared/wire/protocol.ts',
    // `sw-outbox/workbox`, `sw-outbox/react` and `sw-outbox/inspector`: entries of their own, so
    // neither the worker's nor the page's first load grows (SPEC §22).
    'sw/workbox/index.ts',
    'client/react.ts',
    // `sw-outbox/inspector`: a development tool, loaded on demand (SPEC §23).
    'client/inspector.ts',
  ],
  external: isDependency,
  onwarn,
  plugins: [nodeResolve({ extensions }), typescript(), bundleSize()],
  // One output file per source file: an app's bundler then drops whole modules it does not use
  // (`sideEffects: false`), so the page's first load does not carry the worker's validator and
  // the page sender stays in its own lazily loaded chunk.
  output: {
    dir: 'dist',
    format: 'es',
    sourcemap: true,
    preserveModules: true,
    preserveModulesRoot: '.',
  },
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
  // The Workbox app before and after the switch to the drop-in (SPEC §22).
  browser('e2e/workbox/sw-v1.ts', 'dist/e2e/workbox/sw-v1.js'),
  browser('e2e/workbox/sw-v2.ts', 'dist/e2e/workbox/sw-v2.js'),
  browser('e2e/workbox/sw-v3.ts', 'dist/e2e/workbox/sw-v3.js'),
  browser('e2e/workbox/page.ts', 'dist/e2e/workbox/page.js'),
];

const server = {
  input: {
    index: 'server/index.ts',
    cli: 'server/cli.ts',
    kit: 'server/kit/index.ts',
    // One entry per adapter: importing the kit loads no framework it does not use.
    'kit-hono': 'server/kit/hono.ts',
    'kit-express': 'server/kit/express.ts',
    'kit-fastify': 'server/kit/fastify.ts',
    // `sw-outbox-verify`, the ledger's conformance check (SPEC §22.1).
    verify: 'server/verify-cli.ts',
  },
  external: (id) => isServerDependency(id) || isNodeBuiltin(id),
  plugins: [nodeResolve({ extensions, preferBuiltins: true }), typescript(), bundleSize()],
  output: {
    dir: 'server/dist',
    format: 'es',
    sourcemap: true,
    chunkFileNames: '[name]-[hash].js',
    // The package's `bin` runs cli.js directly.
    banner: (chunk) =>
      chunk.name === 'cli' || chunk.name === 'verify' ? '#!/usr/bin/env node' : '',
  },
};

/** SPEC §22's budgets, brotli bytes: the worker with every dependency, the page's first load. */
const BUDGETS = { worker: 36 * 1024, page: 8 * 1024 };

const brotli = (code) => brotliCompressSync(Buffer.from(code)).length;

/**
 * Prints the brotli size of a bundle's first load (the entry and its static imports) and writes
 * it to dist/size/<name>.json for tests/package/budgets.test.ts.
 */
function budgetLine(name) {
  return {
    name: 'budget-line',
    writeBundle(_options, bundle) {
      const entry = Object.values(bundle).find((chunk) => chunk.type === 'chunk' && chunk.isEntry);
      const seen = new Set();
      const visit = (fileName) => {
        if (seen.has(fileName)) return;
        seen.add(fileName);
        for (const imported of bundle[fileName].imports) visit(imported);
      };
      visit(entry.fileName);
      const bytes = [...seen].reduce((sum, fileName) => sum + brotli(bundle[fileName].code), 0);
      const lazy = Object.values(bundle).filter((c) => c.type === 'chunk' && !seen.has(c.fileName));
      const later = lazy.reduce((sum, chunk) => sum + brotli(chunk.code), 0);
      const json = `dist/size/${name}.json`;
      if (WITHOUT.length > 0) {
        // What leaving the modules out saves, against the last full measurement; that one stays.
        const full = existsSync(json) ? JSON.parse(readFileSync(json, 'utf8')).brotli : undefined;
        const saved = full === undefined ? '' : ` (${full - bytes} B less than ${full} B)`;
        console.log(`size without ${WITHOUT.join(', ')}: ${name} ${bytes} B brotli${saved}`);
        return;
      }
      console.log(
        `size budget: ${name} ${kb(bytes)} brotli (budget ${kb(BUDGETS[name])})` +
          (lazy.length ? `, ${kb(later)} loaded on demand` : ''),
      );
      mkdirSync('dist/size', { recursive: true });
      writeFileSync(
        json,
        `${JSON.stringify({ name, brotli: bytes, onDemand: later, budget: BUDGETS[name], files: [...seen] })}\n`,
      );
    },
  };
}

/**
 * What each module adds to a size bundle's first load: its code minified on its own, and its
 * share of the bundle's brotli bytes in proportion (compression works across module boundaries,
 * so a share is an estimate; the shares add up to the measured total). Then the same by package
 * and by folder, largest first.
 */
function moduleReport(name) {
  return {
    name: 'module-report',
    async generateBundle(_options, bundle) {
      const chunks = Object.values(bundle).filter((chunk) => chunk.type === 'chunk');
      const first = new Set();
      const visit = (fileName) => {
        if (first.has(fileName)) return;
        first.add(fileName);
        for (const imported of bundle[fileName].imports) visit(imported);
      };
      visit(chunks.find((chunk) => chunk.isEntry).fileName);
      const rows = [];
      for (const chunk of chunks.filter((c) => first.has(c.fileName))) {
        for (const [id, module] of Object.entries(chunk.modules)) {
          if (!module.code) continue;
          const { code } = await transform(module.code, { minify: true, target: 'es2022' });
          rows.push({
            id: relative(process.cwd(), id).replace(/^.*node_modules\//, 'node_modules/'),
            bytes: code.length,
          });
        }
      }
      const total = [...first].reduce((sum, fileName) => sum + brotli(bundle[fileName].code), 0);
      const minified = rows.reduce((sum, row) => sum + row.bytes, 0);
      const share = (bytes) => Math.round((bytes / minified) * total);
      const print = (title, entries) => {
        console.log(`\n${name}: ${title}   minified   brotli share`);
        for (const [label, bytes] of entries.sort((a, b) => b[1] - a[1])) {
          console.log(
            `  ${label.padEnd(44)} ${String(bytes).padStart(8)} ${String(share(bytes)).padStart(8)}`,
          );
        }
      };
      const group = (keyOf) => {
        const sums = new Map();
        for (const row of rows) sums.set(keyOf(row.id), (sums.get(keyOf(row.id)) ?? 0) + row.bytes);
        return [...sums];
      };
      const packageOf = (id) => {
        if (id.startsWith('dist/')) return 'sw-outbox';
        if (!id.startsWith('node_modules/')) return '(the app)';
        const [, scope, name] = id.split('/');
        return scope.startsWith('@') ? `${scope}/${name}` : scope;
      };
      const folderOf = (id) =>
        id.startsWith('dist/') ? id.split('/').slice(1, -1).join('/') : packageOf(id);
      print(
        'by module',
        rows.map((row) => [row.id, row.bytes]),
      );
      print('by folder', group(folderOf));
      print('by package', group(packageOf));
      console.log(
        `  ${'total'.padEnd(44)} ${String(minified).padStart(8)} ${String(total).padStart(8)}`,
      );
    },
  };
}

const WITHOUT = (process.env.SW_OUTBOX_SIZE_WITHOUT ?? '').split(',').filter(Boolean);

/**
 * Leaves out the modules whose path contains one of `WITHOUT` (`shared/plan/sha256`,
 * `node_modules/idb/`): each export becomes an empty function, so what the bundle loses is what
 * that module costs with everything only it reaches — an upper bound, since code that used its
 * results may fall away too.
 */
function leaveOut() {
  return {
    name: 'leave-out',
    load(id) {
      if (!WITHOUT.some((part) => id.includes(part))) return null;
      const names = new Set();
      const reexports = [];
      for (const node of this.parse(readFileSync(id, 'utf8')).body) {
        if (node.type === 'ExportDefaultDeclaration') names.add('default');
        if (node.type === 'ExportAllDeclaration')
          reexports.push(`export * from '${node.source.value}';`);
        if (node.type !== 'ExportNamedDeclaration') continue;
        for (const spec of node.specifiers) names.add(spec.exported.name ?? spec.exported.value);
        const declaration = node.declaration;
        if (declaration?.id) names.add(declaration.id.name);
        for (const declarator of declaration?.declarations ?? []) names.add(declarator.id.name);
      }
      const stub = [...names].map((n, i) => `const x${i} = () => {};\nexport { x${i} as ${n} };`);
      return { code: [...reexports, ...stub].join('\n'), moduleSideEffects: false };
    },
  };
}

/** A user's bundle of the built package: every dependency in, minified. */
const shipped = (name, input, output) => ({
  input,
  onwarn,
  plugins: [
    ...(WITHOUT.length > 0 ? [leaveOut()] : []),
    nodeResolve({ extensions, browser: true }),
    nodeEnv(),
    esbuild({ target: 'es2022', minify: true, legalComments: 'none' }),
    budgetLine(name),
    ...(process.env.SW_OUTBOX_SIZE_MODULES ? [moduleReport(name)] : []),
  ],
  output: { format: 'es', ...output },
});

// A measurement with modules left out writes its bundles apart, beside the real ones.
const sizeDir = WITHOUT.length > 0 ? 'dist/size/without' : 'dist/size';
const size = [
  shipped('worker', 'tests/package/size/worker.ts', {
    file: `${sizeDir}/worker.js`,
    inlineDynamicImports: true,
  }),
  shipped('page', 'tests/package/size/page.ts', {
    dir: `${sizeDir}/page`,
    entryFileNames: '[name].js',
    chunkFileNames: '[name].js',
  }),
];

export default [
  ...(targets.has('lib') ? [lib] : []),
  ...(targets.has('e2e') ? e2e : []),
  ...(targets.has('server') ? [server] : []),
  ...(targets.has('size') ? size : []),
];
