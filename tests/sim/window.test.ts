import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freshWindow, readHead, WINDOW_BASE, WINDOW_SPAN, windowCommand } from './window.ts';

/** The fresh window of SPEC §20: derived from the commit, replayable, and sane without git. */
describe('the fresh window of seeds', () => {
  const inRange = (n: number) => n >= WINDOW_BASE && n < WINDOW_BASE + WINDOW_SPAN;

  it('starts where the commit says, the same for the same commit and elsewhere for another', () => {
    const a = freshWindow({ GITHUB_SHA: 'a'.repeat(40) }, '/nonexistent');
    const again = freshWindow({ GITHUB_SHA: 'a'.repeat(40) }, '/nonexistent');
    const b = freshWindow({ GITHUB_SHA: `${'a'.repeat(39)}b` }, '/nonexistent');
    const c = freshWindow({ GITHUB_SHA: `b${'a'.repeat(39)}` }, '/nonexistent');
    expect(again).toEqual(a);
    expect(a.source).toBe('commit aaaaaaaaaaaa');
    expect(c.from.memory).not.toBe(a.from.memory);
    expect(b.from).toEqual(a.from);
    for (const w of [a, c]) expect(inRange(w.from.memory) && inRange(w.from.idb)).toBe(true);
  });

  it('reads the checkout’s HEAD from its files as git does', () => {
    const git = spawnSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8' });
    if (git.status !== 0) return;
    expect(readHead(process.cwd())).toBe(git.stdout.trim());
    expect(freshWindow({}).source).toBe(`commit ${git.stdout.trim().slice(0, 12)}`);
  });

  it('falls back to the date (UTC) where there is no commit, and prints how to run it again', () => {
    const empty = mkdtempSync(join(tmpdir(), 'sim-window-'));
    try {
      const day = new Date('2026-12-02T03:00:00Z');
      const w = freshWindow({}, empty, day);
      expect(w.source).toBe('no commit found: the date 2026-12-02 (UTC)');
      expect(freshWindow({}, empty, new Date('2026-12-03T03:00:00Z')).from).not.toEqual(w.from);
      expect(inRange(w.from.memory)).toBe(true);
      expect(windowCommand(w, 'idb')).toBe(
        `npm run sim -- --from ${w.from.idb} --seeds ${w.seeds.idb} --store idb`,
      );
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('takes an explicit start from SW_OUTBOX_SIM_WINDOW', () => {
    const w = freshWindow({ SW_OUTBOX_SIM_WINDOW: '1234567890', GITHUB_SHA: 'a'.repeat(40) });
    expect(w.from.memory).toBe(1_234_567_890);
    expect(w.source).toBe('SW_OUTBOX_SIM_WINDOW=1234567890');
  });
});
