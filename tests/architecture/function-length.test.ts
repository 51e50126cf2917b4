import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { type LongFunction, longFunctions, MAX_FUNCTION_LINES } from './function-length.ts';
import { readSourceTree } from './tree.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** `count` lines of statements, none of them a brace. */
const lines = (count: number, statement = '  n++;') => Array(count).fill(statement).join('\n');

/** A function of exactly `total` lines: its head, `total - 2` statements, its closing brace. */
const fn = (head: string, total: number, tail = '}') => `${head}\n${lines(total - 2)}\n${tail}`;

/** `#{` written as a template substitution, so that the texts below are plain strings. */
const substitutions = (text: string) => text.replaceAll('#{', '$\x7b');

const found = (text: string): Array<Omit<LongFunction, 'file'>> =>
  longFunctions(new Map([['shared/plan/x.ts', text]])).map(({ file: _file, ...rest }) => rest);

describe('the function length check itself', () => {
  it.each<{ tree: string; text: string; expected: Array<Omit<LongFunction, 'file'>> }>([
    {
      tree: 'a 121-line function declaration is found',
      text: fn('export function tooLong(): void {', 121),
      expected: [{ line: 1, name: 'tooLong', lines: 121 }],
    },
    {
      tree: 'a 120-line function declaration is not',
      text: fn('export function justRight(): void {', 120),
      expected: [],
    },
    {
      tree: 'a 121-line arrow function with a block body is found under its variable’s name',
      text: `const a = 1;\n${fn('export const tooLong = async (x: number): Promise<void> => {', 121, '};')}`,
      expected: [{ line: 2, name: 'tooLong', lines: 121 }],
    },
    {
      tree: 'an arrow whose parameters span lines is measured from its parameters',
      text: fn('const tooLong = (\n  x: number,\n): void => {', 119, '};'),
      expected: [{ line: 1, name: 'tooLong', lines: 121 }],
    },
    {
      tree: 'a 121-line function expression is found under its variable’s name',
      text: fn('const tooLong = function () {', 121, '};'),
      expected: [{ line: 1, name: 'tooLong', lines: 121 }],
    },
    {
      tree: 'a 121-line class method is found, and the class is not a function',
      text: `export class Big {\n  #n = 0;\n${fn('  async #tooLong<T>(x: T): Promise<{ x: T }> {', 121, '  }')}\n}`,
      expected: [{ line: 3, name: '#tooLong', lines: 121 }],
    },
    {
      tree: 'a 121-line object method is found',
      text: `export const api = {\n  a: 1,\n${fn('  get tooLong(): number {', 121, '  },')}\n};`,
      expected: [{ line: 3, name: 'tooLong', lines: 121 }],
    },
    {
      tree: 'an arrow passed as an argument is named after its callee',
      text: fn("describe('a suite', () => {", 121, '});'),
      expected: [{ line: 1, name: 'describe callback', lines: 121 }],
    },
    {
      tree: 'a return type with an object type is not taken for the body',
      text: fn('function tooLong(): { a: { b: string } } {', 121),
      expected: [{ line: 1, name: 'tooLong', lines: 121 }],
    },
    {
      tree: 'signatures without a body (interfaces, overloads, control statements) are no functions',
      text: `interface A {\n  f(): void;\n  g(): { a: number };\n}\nfunction h(a: string): void;\nif (x) {\n${lines(130)}\n}`,
      expected: [],
    },
    {
      tree: 'nested functions are measured on their own, and inside the one around them',
      text: fn(`function outer() {\n  n++;\n${fn('  const inner = () => {', 121, '  };')}`, 2),
      expected: [
        { line: 1, name: 'outer', lines: 125 },
        { line: 3, name: 'inner', lines: 121 },
      ],
    },
    {
      tree: 'a short function nested in a long one is not found',
      text: fn('function outer() {\n  const inner = () => {\n    n++;\n  };', 121),
      expected: [{ line: 1, name: 'outer', lines: 124 }],
    },
  ])('$tree', ({ text, expected }) => {
    expect(found(text)).toEqual(expected);
  });

  // Each text hides a brace that would end the long function early, or open one that never ends.
  it.each<{ where: string; closing: string; opening: string }>([
    { where: 'a string', closing: "  s = '}';", opening: '  s = "{";' },
    { where: 'a template literal', closing: '  s = `}`;', opening: '  s = `{\n{`;' },
    {
      where: 'a template literal with a substitution',
      closing: substitutions('  s = `}#{`}#{{ a: 1 }.a}`}}`;'),
      opening: substitutions('  s = `{#{x}{`;'),
    },
    { where: 'a line comment', closing: '  // }', opening: '  // {' },
    { where: 'a block comment', closing: '  /* } \n } */', opening: '  /* {\n { */' },
    { where: 'a regular expression literal', closing: '  s = /}[/}]/g;', opening: '  s = /{/;' },
    { where: 'an escaped quote in a string', closing: "  s = '\\'}';", opening: "  s = '\\'{';" },
  ])('ignores braces inside $where', ({ closing, opening }) => {
    const long = `function tooLong() {\n${closing}\n${lines(119 - closing.split('\n').length)}\n}`;
    expect(found(long)).toEqual([{ line: 1, name: 'tooLong', lines: 121 }]);
    const short = `function short() {\n${opening}\n}\n${lines(130)}\nfunction after() {\n}`;
    expect(found(short)).toEqual([]);
  });

  it('still reads a division as a division', () => {
    const text = fn('function tooLong(a: number, b: number) {\n  const c = (a) / b / (2);', 120);
    expect(found(text)).toEqual([{ line: 1, name: 'tooLong', lines: 121 }]);
  });
});

describe('the tree is readable in one sitting', () => {
  it(`has no function in shared/ or client/ over ${MAX_FUNCTION_LINES} lines`, () => {
    const tree = readSourceTree(root);
    const mine = new Map(
      [...tree].filter(([path]) => path.startsWith('shared/') || path.startsWith('client/')),
    );
    expect(
      longFunctions(mine).map((f) => `${f.file}:${f.line} ${f.name} (${f.lines} lines)`),
    ).toEqual([]);
  });
});
