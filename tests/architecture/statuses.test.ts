import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { RowProgress } from '../../client/observable.ts';
import type { RowStatus } from '../../shared/model/row.ts';
import { RECORD_STATUS_OF, RECORD_STATUSES } from '../../shared/plan/record-overlay.ts';

const doc = readFileSync(new URL('../../docs/statuses.md', import.meta.url), 'utf8');

/** The rows of the table whose header starts with `| <first> |`: each row's cells. */
function table(first: string): string[][] {
  const start = doc.indexOf(`| ${first} |`);
  expect(start, `a table headed "${first}" in docs/statuses.md`).toBeGreaterThanOrEqual(0);
  const end = doc.indexOf('\n\n', start);
  return doc
    .slice(start, end === -1 ? undefined : end)
    .split('\n')
    .slice(2)
    .filter((line) => line.startsWith('|'))
    .map((line) =>
      line
        .slice(1, -1)
        .split(' | ')
        .map((cell) => cell.trim()),
    );
}

const word = (cell: string | undefined) => /^`(\w+)`$/.exec(cell ?? '')?.[1];

/** The words a watched row ends with; a new one is a type error here until it is listed. */
const ENDS: Record<Exclude<RowProgress, RowStatus>, true> = {
  settled: true,
  removed: true,
  gone: true,
};

describe('docs/statuses.md matches the code', () => {
  it('lists every row status once, with a label and the record status it counts as', () => {
    const rows = table('row status');
    expect(Object.fromEntries(rows.map((cells) => [word(cells[0]), word(cells[3])]))).toEqual(
      RECORD_STATUS_OF,
    );
    expect(rows).toHaveLength(Object.keys(RECORD_STATUS_OF).length);
    for (const cells of rows) expect(cells[2], cells[0]).toMatch(/\w/);
  });

  it('lists every record status, from the most urgent, with a label', () => {
    const rows = table('record status');
    expect(rows.map((cells) => word(cells[0]))).toEqual([...RECORD_STATUSES].reverse());
    for (const cells of rows) expect(cells[2], cells[0]).toMatch(/\w/);
  });

  it('lists every way a watched row ends', () => {
    expect(table('progress').map((cells) => word(cells[0]))).toEqual(Object.keys(ENDS));
  });

  it('is linked from the README’s guides', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    expect(readme).toContain('(docs/statuses.md)');
  });
});
