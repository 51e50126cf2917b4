import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../shared/model/error-codes.ts';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

describe('README matches the code', () => {
  it('lists every error code with its hint, and no other', () => {
    const start = readme.indexOf('| code | what to do |');
    const table = readme.slice(start, readme.indexOf('\n\n', start));
    const rows = [...table.matchAll(/^\| `(\w+)` \| (.*) \|$/gm)].map(([, code, hint]) => [
      code,
      hint!.replaceAll('\\|', '|'),
    ]);
    expect(Object.fromEntries(rows)).toEqual(ERROR_CODES);
  });
});
