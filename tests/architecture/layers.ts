/**
 * The architecture of SPEC §1 as a check: which folder may import which, no import circles, and
 * no environment globals in the pure layers. Pure: it takes file texts and returns findings, so
 * its own tests can hand it broken trees.
 */

/** A folder of the library with its own import rules. */
export type Layer =
  | 'model'
  | 'plan'
  | 'store'
  | 'wire'
  | 'core'
  | 'runtime'
  | 'shared-index'
  | 'sw'
  | 'client'
  | 'server';

const SHARED: Layer[] = ['model', 'plan', 'store', 'wire', 'core', 'runtime'];

/** What each layer may import (itself included). */
export const ALLOWED: Record<Layer, readonly Layer[]> = {
  model: ['model'],
  plan: ['model', 'plan'],
  store: ['model', 'plan', 'store'],
  wire: ['model', 'wire'],
  core: ['model', 'plan', 'core'],
  runtime: [...SHARED],
  'shared-index': [...SHARED],
  sw: [...SHARED, 'sw'],
  client: [...SHARED, 'client'],
  // Its own package (SPEC §22): the library's wire types come by name, `sw-outbox/wire`.
  server: ['server'],
};

/** Layers that must not touch the environment (SPEC §1: "may touch the environment? no"). */
export const PURE: readonly Layer[] = ['model', 'plan', 'core', 'wire'];

/** Packages a layer may import; anything not listed is refused. */
const PACKAGES: Record<Layer, RegExp> = {
  model: /^zod\/mini$/,
  plan: /^$/,
  store: /^idb$/,
  wire: /^$/,
  core: /^$/,
  runtime: /^comlink$/,
  'shared-index': /^$/,
  sw: /^(comlink|workbox-[a-z-]+)$/,
  client: /^(comlink|workbox-[a-z-]+|workbox-window\/build\/workbox-window\.prod\.mjs|react)$/,
  // The kit's adapters (server/kit/) import their frameworks, optional peers of the package.
  server: /^(node:.+|fastify|@fastify\/.+|better-sqlite3|pg|zod|sw-outbox\/wire|express|hono)$/,
};

/**
 * Environment globals: clocks, randomness, the network, timers, the browser's location and
 * navigator, storage. A word that follows a `.` is a property (`row.location`), not the global.
 */
const ENVIRONMENT: ReadonlyArray<{ name: string; pattern: RegExp }> = [
  { name: 'Date.now()', pattern: /(?<![.\w$])Date\s*\.\s*now\b/ },
  { name: 'new Date()', pattern: /\bnew\s+Date\s*\(\s*\)/ },
  { name: 'Math.random()', pattern: /(?<![.\w$])Math\s*\.\s*random\b/ },
  { name: 'crypto', pattern: /(?<![.\w$])crypto\b/ },
  { name: 'fetch', pattern: /(?<![.\w$])fetch\s*\(/ },
  { name: 'timers', pattern: /(?<![.\w$])(setTimeout|setInterval|clearTimeout|clearInterval)\b/ },
  { name: 'performance', pattern: /(?<![.\w$])performance\b/ },
  { name: 'navigator', pattern: /(?<![.\w$])navigator\b/ },
  { name: 'location', pattern: /(?<![.\w$])location\b/ },
  { name: 'indexedDB', pattern: /(?<![.\w$])(indexedDB|IDBKeyRange|IDBFactory)\b/ },
  { name: 'BroadcastChannel', pattern: /(?<![.\w$])BroadcastChannel\b/ },
  { name: 'AbortController', pattern: /(?<![.\w$])AbortController\b/ },
  { name: 'globalThis', pattern: /(?<![.\w$])(globalThis|self|window|document)\b/ },
];

/** One problem found, with where it is. */
export interface Finding {
  file: string;
  line: number;
  message: string;
}

interface Edge {
  from: string;
  to: string;
  line: number;
  specifier: string;
}

/** The layer a repository path belongs to, `'misplaced'` for a file in `shared/` outside them. */
export function layerOf(path: string): Layer | 'misplaced' | undefined {
  const [top, second] = path.split('/');
  if (top === 'shared') {
    if (path === 'shared/index.ts') return 'shared-index';
    return (SHARED as string[]).includes(second ?? '') && path.split('/').length > 2
      ? (second as Layer)
      : 'misplaced';
  }
  if (top === 'sw' || top === 'client' || top === 'server') return top;
  return undefined;
}

/** Comments and string contents blanked out (line breaks kept), so patterns see only code. */
export function codeOnly(text: string, options: { keepStrings?: boolean } = {}): string {
  let out = '';
  let i = 0;
  const keep = (ch: string) => (ch === '\n' ? '\n' : ' ');
  while (i < text.length) {
    const ch = text[i]!;
    const next = text[i + 1];
    if (ch === '/' && next === '/') {
      while (i < text.length && text[i] !== '\n') {
        out += ' ';
        i++;
      }
    } else if (ch === '/' && next === '*') {
      const end = text.indexOf('*/', i + 2);
      const stop = end === -1 ? text.length : end + 2;
      for (; i < stop; i++) out += keep(text[i]!);
    } else if (ch === "'" || ch === '"' || ch === '`') {
      out += ch;
      i++;
      while (i < text.length && text[i] !== ch) {
        if (text[i] === '\\') {
          out += options.keepStrings ? text.slice(i, i + 2) : '  ';
          i += 2;
          continue;
        }
        // Template literal substitutions are code.
        if (ch === '`' && text[i] === '$' && text[i + 1] === '{') {
          let depth = 0;
          do {
            if (text[i] === '{') depth++;
            if (text[i] === '}') depth--;
            out += text[i];
            i++;
          } while (i < text.length && depth > 0);
          continue;
        }
        out += options.keepStrings ? text[i]! : keep(text[i]!);
        i++;
      }
      out += ch;
      i++;
    } else {
      out += ch;
      i++;
    }
  }
  return out;
}

const IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)(['"])([^'"]+)\1/gm;

/** Every import and re-export of a file (type-only ones included), with its line. */
export function importsOf(text: string): Array<{ specifier: string; line: number }> {
  const found: Array<{ specifier: string; line: number }> = [];
  for (const match of text.matchAll(IMPORT)) {
    const before = text.slice(0, match.index + match[0].length);
    found.push({ specifier: match[2]!, line: before.split('\n').length });
  }
  return found;
}

function resolveRelative(from: string, specifier: string): string {
  const parts = from.split('/').slice(0, -1);
  for (const part of specifier.split('/')) {
    if (part === '.' || part === '') continue;
    if (part === '..') parts.pop();
    else parts.push(part);
  }
  return parts.join('/');
}

function lineOf(text: string, index: number): number {
  return text.slice(0, index).split('\n').length;
}

/** Checks a tree of source files (repository path → text) against SPEC §1. */
export function checkLayers(files: ReadonlyMap<string, string>): Finding[] {
  const findings: Finding[] = [];
  const edges: Edge[] = [];
  for (const [file, text] of files) {
    const layer = layerOf(file);
    if (layer === undefined) continue;
    if (layer === 'misplaced') {
      findings.push({
        file,
        line: 1,
        message:
          'shared/ holds only index.ts and the folders model, plan, store, wire, core, runtime',
      });
      continue;
    }
    for (const { specifier, line } of importsOf(codeOnly(text, { keepStrings: true }))) {
      if (!specifier.startsWith('.')) {
        if (!PACKAGES[layer].test(specifier))
          findings.push({
            file,
            line,
            message: `${layer} may not import the package '${specifier}'`,
          });
        continue;
      }
      const target = resolveRelative(file, specifier);
      const targetLayer = layerOf(target);
      if (targetLayer === undefined || targetLayer === 'misplaced') continue;
      edges.push({ from: file, to: target, line, specifier });
      if (!ALLOWED[layer].includes(targetLayer)) {
        findings.push({
          file,
          line,
          message: `${layer} may not import ${targetLayer} ('${specifier}'): ${layer} imports only ${ALLOWED[layer].join(', ')}`,
        });
      }
    }
    if (PURE.includes(layer)) {
      const code = codeOnly(text);
      for (const { name, pattern } of ENVIRONMENT) {
        const global = new RegExp(pattern.source, 'g');
        for (const match of code.matchAll(global)) {
          findings.push({
            file,
            line: lineOf(code, match.index),
            message: `${name} in ${layer}/, which is environment-free: take it through a port (Clock, IdSource, Transport, OutboxStore)`,
          });
        }
      }
    }
    if (layer === 'store' && !file.endsWith('/idb.ts')) {
      const code = codeOnly(text);
      const idb = /(?<![.\w$])(indexedDB|IDBKeyRange|IDBFactory)\b/g;
      for (const match of code.matchAll(idb)) {
        findings.push({
          file,
          line: lineOf(code, match.index),
          message: 'only shared/store/idb.ts opens IndexedDB',
        });
      }
    }
  }
  findings.push(...circles(edges));
  return findings;
}

/** Import circles (Tarjan's strongly connected components), each reported once. */
function circles(edges: Edge[]): Finding[] {
  const out = new Map<string, Edge[]>();
  for (const edge of edges) {
    const list = out.get(edge.from) ?? [];
    list.push(edge);
    out.set(edge.from, list);
  }
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  let counter = 0;
  const visit = (node: string) => {
    index.set(node, counter);
    low.set(node, counter);
    counter++;
    stack.push(node);
    onStack.add(node);
    for (const { to } of out.get(node) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node)!, index.get(to)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      components.push(component);
    }
  };
  for (const node of out.keys()) if (!index.has(node)) visit(node);
  const findings: Finding[] = [];
  for (const component of components) {
    const members = new Set(component);
    const inside = edges.filter((e) => members.has(e.from) && members.has(e.to));
    if (inside.length === 0) continue;
    const start = [...members].sort()[0]!;
    const path = shortestCycle(start, inside);
    findings.push({
      file: path[0]!.from,
      line: path[0]!.line,
      message: `import circle: ${path.map((e) => `${e.from}:${e.line}`).join(' → ')} → ${start}`,
    });
  }
  return findings;
}

/** The shortest chain of imports from `start` back to itself (breadth first). */
function shortestCycle(start: string, edges: Edge[]): Edge[] {
  const via = new Map<string, Edge>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const edge of edges) {
      if (edge.from !== node) continue;
      if (edge.to === start) {
        const path = [edge];
        for (let at = node; at !== start; at = via.get(at)!.from) path.unshift(via.get(at)!);
        return path;
      }
      if (!via.has(edge.to)) {
        via.set(edge.to, edge);
        queue.push(edge.to);
      }
    }
  }
  return edges.slice(0, 1);
}

/** Exports without a TSDoc comment right above them (STYLE: TSDoc on every export). */
export function undocumentedExports(files: ReadonlyMap<string, string>): Finding[] {
  const findings: Finding[] = [];
  const declaration =
    /^export\s+(?:declare\s+)?(?:default\s+)?(?:async\s+)?(?:abstract\s+)?(function\*?|const|let|class|interface|type|enum)\s+([A-Za-z_$][\w$]*)/;
  for (const [file, text] of files) {
    if (layerOf(file) === undefined) continue;
    const lines = text.split('\n');
    lines.forEach((line, i) => {
      const match = declaration.exec(line);
      if (!match) return;
      let j = i - 1;
      while (j >= 0 && lines[j]!.trim() === '') j--;
      if (j >= 0 && lines[j]!.trim().endsWith('*/')) return;
      findings.push({ file, line: i + 1, message: `export ${match[2]} has no TSDoc comment` });
    });
  }
  return findings;
}
