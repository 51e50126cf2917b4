/**
 * "A core you can read in one sitting" (issue 22) as a check: no function longer than a budget
 * of lines. Pure: it takes file texts and returns findings, so its own tests can hand it small
 * trees. A function's length runs from the line it starts on (its `function` keyword, its
 * method name, or its arrow's parameters) to the line of its closing brace, both counted; a
 * nested function is measured on its own, and also counts toward the function around it.
 *
 * The source is read by a small tokenizer rather than by patterns, so that braces inside
 * strings, template literals, comments and regular expression literals are not counted.
 */

/** The budget of issue 22: no function in `shared/` or `client/` longer than this. */
export const MAX_FUNCTION_LINES = 120;

/** A function over the budget. */
export interface LongFunction {
  file: string;
  /** The line the function starts on. */
  line: number;
  /** Its name as a reader finds it: declared, assigned, the method's, or `callee callback`. */
  name: string;
  /** From its first line to the line of its closing brace, both counted. */
  lines: number;
}

/** Every function of `files` longer than `max` lines, in file order, then line order. */
export function longFunctions(
  files: ReadonlyMap<string, string>,
  max: number = MAX_FUNCTION_LINES,
): LongFunction[] {
  const found: LongFunction[] = [];
  for (const [file, text] of files) {
    for (const fn of functionsOf(text)) {
      if (fn.lines > max) found.push({ file, ...fn });
    }
  }
  return found;
}

/** Every function of one source text with a block body: where it starts, its name and length. */
function functionsOf(text: string): Array<Omit<LongFunction, 'file'>> {
  const tokens = tokenize(text);
  const { match, enclosing } = pairBrackets(tokens);
  const found: Array<Omit<LongFunction, 'file'> & { at: number }> = [];
  const add = (start: number, name: string, body: number | undefined) => {
    const close = body === undefined ? -1 : (match[body] ?? -1);
    if (close < 0) return;
    const line = tokens[start]!.line;
    found.push({ at: start, line, name, lines: tokens[close]!.line - line + 1 });
  };
  const ctx: Context = { tokens, match, enclosing };

  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (token.kind === 'word' && token.value === 'function') {
      let j = i + 1;
      if (tokens[j]?.value === '*') j++;
      let name: string | undefined;
      if (tokens[j]?.kind === 'word') {
        name = tokens[j]!.value;
        j++;
      }
      j = skipGenerics(ctx, j);
      if (tokens[j]?.value !== '(') continue;
      const start = tokens[i - 1]?.value === 'async' ? i - 1 : i;
      add(i, name ?? nameBefore(ctx, start), bodyAfter(ctx, match[j] ?? -1));
    } else if (token.value === '=>' && tokens[i + 1]?.value === '{') {
      const start = arrowStart(ctx, i);
      add(start, nameBefore(ctx, start), i + 1);
    } else if (token.value === '(' && i > 0) {
      const method = methodName(ctx, i);
      if (method !== undefined) add(method.start, method.name, bodyAfter(ctx, match[i] ?? -1));
    }
  }
  return found.sort((a, b) => a.at - b.at).map(({ at: _at, ...fn }) => fn);
}

interface Token {
  kind: 'word' | 'punct' | 'literal';
  value: string;
  line: number;
}

interface Context {
  tokens: Token[];
  /** For each bracket, the index of its partner; -1 elsewhere. */
  match: number[];
  /** For each token, the index of the innermost bracket open around it; -1 at the top. */
  enclosing: number[];
}

/** Words after which a `/` begins a regular expression rather than a division. */
const BEFORE_REGEX = new Set([
  'return',
  'typeof',
  'instanceof',
  'in',
  'of',
  'new',
  'delete',
  'void',
  'throw',
  'case',
  'do',
  'else',
  'yield',
  'await',
]);

/**
 * The code as words, punctuation and literals, each with its line. Strings, template texts,
 * regular expressions and numbers become one literal token; comments disappear; a template's
 * `${…}` substitutions are code, tokenized like the rest.
 */
function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  // What each open `{` is: a brace of the code, or a template substitution to return from.
  const braces: Array<'code' | 'template'> = [];
  let line = 1;
  let i = 0;
  const push = (kind: Token['kind'], value: string, at: number) =>
    tokens.push({ kind, value, line: at });
  const countLines = (from: number, to: number) => {
    for (let k = from; k < to; k++) if (text[k] === '\n') line++;
  };
  /** Reads template text from `i` to its closing backtick or into a `${` substitution. */
  const templateText = (): void => {
    const startLine = line;
    while (i < text.length) {
      const ch = text[i]!;
      if (ch === '\\') {
        countLines(i, i + 2);
        i += 2;
      } else if (ch === '`') {
        i++;
        push('literal', '`', startLine);
        return;
      } else if (ch === '$' && text[i + 1] === '{') {
        i += 2;
        braces.push('template');
        push('literal', '`', startLine);
        return;
      } else {
        if (ch === '\n') line++;
        i++;
      }
    }
    push('literal', '`', startLine);
  };

  while (i < text.length) {
    const ch = text[i]!;
    const next = text[i + 1];
    if (ch === '\n') {
      line++;
      i++;
    } else if (/\s/.test(ch)) {
      i++;
    } else if (ch === '/' && next === '/') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (ch === '/' && next === '*') {
      const end = text.indexOf('*/', i + 2);
      const stop = end === -1 ? text.length : end + 2;
      countLines(i, stop);
      i = stop;
    } else if (ch === "'" || ch === '"') {
      const startLine = line;
      i++;
      while (i < text.length && text[i] !== ch && text[i] !== '\n') {
        if (text[i] === '\\') countLines(i + 1, i + 2);
        i += text[i] === '\\' ? 2 : 1;
      }
      if (text[i] === ch) i++;
      push('literal', ch, startLine);
    } else if (ch === '`') {
      i++;
      templateText();
    } else if (ch === '/' && regexMayStart(tokens[tokens.length - 1])) {
      const startLine = line;
      i++;
      let inClass = false;
      while (i < text.length && text[i] !== '\n') {
        const c = text[i]!;
        if (c === '\\') {
          i += 2;
          continue;
        }
        if (c === '[') inClass = true;
        else if (c === ']') inClass = false;
        else if (c === '/' && !inClass) break;
        i++;
      }
      if (text[i] === '/') i++;
      while (i < text.length && /[a-z]/i.test(text[i]!)) i++;
      push('literal', '/', startLine);
    } else if (/[A-Za-z_$#]/.test(ch)) {
      const start = i;
      i++;
      while (i < text.length && /[\w$]/.test(text[i]!)) i++;
      push('word', text.slice(start, i), line);
    } else if (/[0-9]/.test(ch)) {
      i++;
      while (i < text.length && /[\w.]/.test(text[i]!)) i++;
      push('literal', '0', line);
    } else if (ch === '=' && next === '>') {
      i += 2;
      push('punct', '=>', line);
    } else if (ch === '{') {
      i++;
      braces.push('code');
      push('punct', '{', line);
    } else if (ch === '}') {
      i++;
      if (braces.pop() === 'template') templateText();
      else push('punct', '}', line);
    } else {
      i++;
      push('punct', ch, line);
    }
  }
  return tokens;
}

/** Whether a `/` after `previous` starts a regular expression (else it divides). */
function regexMayStart(previous: Token | undefined): boolean {
  if (previous === undefined) return true;
  if (previous.kind === 'literal') return false;
  if (previous.kind === 'word') return BEFORE_REGEX.has(previous.value);
  return previous.value !== ')' && previous.value !== ']' && previous.value !== '}';
}

const OPENS: Record<string, string> = { '(': ')', '[': ']', '{': '}' };

/** Pairs every bracket with its partner and notes, for each token, the bracket around it. */
function pairBrackets(tokens: Token[]): { match: number[]; enclosing: number[] } {
  const match = tokens.map(() => -1);
  const enclosing = tokens.map(() => -1);
  const open: number[] = [];
  tokens.forEach((token, i) => {
    enclosing[i] = open[open.length - 1] ?? -1;
    if (token.kind !== 'punct') return;
    if (OPENS[token.value] !== undefined) {
      open.push(i);
    } else if (token.value === ')' || token.value === ']' || token.value === '}') {
      const top = open[open.length - 1];
      if (top !== undefined && OPENS[tokens[top]!.value] === token.value) {
        open.pop();
        match[i] = top;
        match[top] = i;
        enclosing[i] = open[open.length - 1] ?? -1;
      }
    }
  });
  return { match, enclosing };
}

/** Past a `<…>` type parameter list at `i`, if one is there. */
function skipGenerics({ tokens }: Context, i: number): number {
  if (tokens[i]?.value !== '<') return i;
  let depth = 0;
  for (let j = i; j < tokens.length; j++) {
    const value = tokens[j]!.value;
    if (value === '<') depth++;
    else if (value === '>' && --depth === 0) return j + 1;
  }
  return i;
}

/** Tokens after which a `{` in a return type is an object type, not the function's body. */
const TYPE_EXPECTED = new Set([':', '|', '&', '<', ',', '(', '[', '=>', 'keyof']);

/**
 * The body's `{` after a parameter list closing at `close`, skipping a return type; undefined
 * for a signature without a body (an overload, an interface's method).
 */
function bodyAfter({ tokens, match }: Context, close: number): number | undefined {
  if (close < 0) return undefined;
  const after = close + 1;
  if (tokens[after]?.value === '{') return after;
  if (tokens[after]?.value !== ':') return undefined;
  let angles = 0;
  for (let previous = ':', j = after + 1; j < tokens.length; j++) {
    const value = tokens[j]!.value;
    if (tokens[j]!.kind === 'punct') {
      if (value === '{' && !TYPE_EXPECTED.has(previous)) return j;
      if (value === '(' || value === '[' || value === '{') {
        j = match[j]!;
        if (j < 0) return undefined;
        previous = tokens[j]!.value;
        continue;
      }
      if (value === '<') angles++;
      else if (value === '>') angles--;
      else if (value === ';' || value === '=' || value === ')' || value === ']' || value === '}')
        return undefined;
      else if (value === ',' && angles === 0) return undefined;
    }
    previous = value;
  }
  return undefined;
}

/** The first token of an arrow function whose `=>` is at `arrow`: its parameters, or `async`. */
function arrowStart(ctx: Context, arrow: number): number {
  const { tokens, match } = ctx;
  let start = arrow - 1;
  if (tokens[start]?.value === ')') {
    start = match[start]!;
  } else {
    // A return type between the parameters and the arrow: `(a): T => {`.
    let depth = 0;
    for (let j = start; j >= 0 && j > arrow - 80; j--) {
      const value = tokens[j]!.value;
      if (tokens[j]!.kind !== 'punct') continue;
      if (value === ')' || value === ']' || value === '}' || value === '>') depth++;
      else if (value === '(' || value === '[' || value === '{' || value === '<') depth--;
      if (depth < 0) break;
      if (depth > 0) continue;
      if (value === ':' && tokens[j - 1]?.value === ')') {
        start = match[j - 1]!;
        break;
      }
      if (value === ';' || value === '=' || value === ',' || value === '=>') break;
    }
  }
  if (start < 0) return arrow;
  if (tokens[start - 1]?.value === '>') {
    // Type parameters before the parameters: `<T>(a) => {`.
    let depth = 0;
    for (let j = start - 1; j >= 0; j--) {
      if (tokens[j]!.value === '>') depth++;
      else if (tokens[j]!.value === '<' && --depth === 0) {
        start = j;
        break;
      }
    }
  }
  return tokens[start - 1]?.value === 'async' ? start - 1 : start;
}

/** The name a function expression or arrow starting at `start` is known by. */
function nameBefore({ tokens, enclosing }: Context, start: number): string {
  const before = tokens[start - 1];
  const word = tokens[start - 2];
  if (before?.value === '=' && word?.kind === 'word') return word.value;
  if (before?.value === ':' && word?.kind === 'word') {
    const container = tokens[start - 3]?.value;
    if (container === '{' || container === ',') return word.value;
  }
  if (before?.value === 'default') return 'default';
  if (before?.value === '(' || before?.value === ',') {
    const open = before.value === '(' ? start - 1 : enclosing[start - 1]!;
    const callee = tokens[open - 1];
    if (tokens[open]?.value === '(' && callee?.kind === 'word' && !NOT_METHODS.has(callee.value))
      return `${callee.value} callback`;
  }
  return '<anonymous>';
}

/** Words that take a parenthesized head and a block, which a method does not follow. */
const NOT_METHODS = new Set([
  'if',
  'for',
  'while',
  'switch',
  'catch',
  'with',
  'function',
  'return',
  'typeof',
  'await',
  'yield',
  'new',
  'super',
  'import',
]);

/** Words that may stand before a method's name. */
const MODIFIERS = new Set([
  'async',
  'get',
  'set',
  'static',
  'public',
  'private',
  'protected',
  'readonly',
  'override',
  'abstract',
  'accessor',
]);

/**
 * A class or object method whose parameter list opens at `open`: `name(…) {`, `get name() {`,
 * `async *name<T>(…): T {`. The name must follow the start of a class or object body or a
 * member before it, which a call followed by a block never does.
 */
function methodName(
  { tokens }: Context,
  open: number,
): { start: number; name: string } | undefined {
  let i = open - 1;
  if (tokens[i]?.value === '>') {
    let depth = 0;
    for (; i >= 0; i--) {
      if (tokens[i]!.value === '>') depth++;
      else if (tokens[i]!.value === '<' && --depth === 0) break;
    }
    i--;
  }
  const name = tokens[i];
  if (name === undefined || name.kind !== 'word' || NOT_METHODS.has(name.value)) return undefined;
  let start = i;
  while (tokens[start - 1] !== undefined) {
    const value = tokens[start - 1]!.value;
    if (value === '*' || (MODIFIERS.has(value) && tokens[start - 1]!.kind === 'word')) start--;
    else break;
  }
  const before = tokens[start - 1]?.value;
  if (before !== '{' && before !== '}' && before !== ';' && before !== ',') return undefined;
  return { start, name: name.value };
}
