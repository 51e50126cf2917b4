// @vitest-environment happy-dom
import { afterEach, describe, expect, it, vi } from 'vitest';
import { defineOutboxInspector, type InspectorOutbox } from '../../client/inspector.ts';
import type { OutboxHealth, RowView } from '../../shared/model/page-api.ts';
import type { ConflictLedgerEntry, Receipt } from '../../shared/model/store.ts';

/**
 * SPEC §23, the inspector as a package: `<outbox-inspector>` shows health, rows, receipts and
 * conflicts of the outbox it is given, and a person can retry or discard a blocked row, restore
 * a conflict and export the trace from it. Values are text, never markup.
 */

const NOW = Date.now();

function rowView(
  id: string,
  status: RowView['status'],
  extra: Record<string, unknown> = {},
): RowView {
  return {
    id,
    status,
    row: {
      v: 1,
      id,
      owner: 'alice',
      collection: 'notes',
      kind: 'update',
      targetId: '<img src=x onerror=alert(1)>',
      savedAt: NOW - 5_000,
      state: status === 'blocked' ? 'blocked' : 'queued',
      evidence: { attemptCount: 2, lastErrorCode: 'network' },
      ...extra,
    },
    ...(status === 'sending' ? { holderId: 'sw-000000000000000000000001' } : {}),
  } as RowView;
}

const health: OutboxHealth = {
  at: NOW,
  counts: {} as OutboxHealth['counts'],
  total: 2,
  oldestPendingAgeMs: 5_000,
  lastSuccessAt: null,
  nextAttemptAt: null,
  senders: { worker: 'sw-000000000000000000000001' },
  storage: { persisted: false },
  stalled: 'blocked',
  causes: ['blocked'],
};

function fakeOutbox() {
  let listener: ((rows: RowView[]) => void) | undefined;
  const outbox = {
    subscribe: vi.fn((next: (rows: RowView[]) => void) => {
      listener = next;
      next([
        rowView('notes-aaaaaaaaaaaa', 'blocked', { blockedCode: 'revision_conflict' }),
        rowView('notes-bbbbbbbbbbbb', 'sending', {
          claim: { holderId: 'sw-1', expiresAt: NOW, fence: 3 },
        }),
      ]);
      return () => {
        listener = undefined;
      };
    }),
    health: vi.fn(async () => health),
    receipts: vi.fn(async () => [
      {
        requestId: 'notes-cccccccccccc',
        collection: 'notes',
        kind: 'create',
        targetId: 'pending:x',
        serverId: 'n_7',
        status: 201,
        settledAt: NOW,
      } as Receipt,
    ]),
    conflicts: vi.fn(async () => [
      {
        successorId: 'notes-dddddddddddd',
        collection: 'notes',
        targetId: 'n_1',
        overwrittenRevision: 3,
        finalRevision: 4,
        historyRef: { supersededRevision: 3 },
      } as unknown as ConflictLedgerEntry,
    ]),
    retry: vi.fn(async () => undefined),
    discard: vi.fn(async () => undefined),
    restore: vi.fn(async () => ({ id: 'x', targetId: 'n_1', outcome: 'queued' as const })),
    exportTrace: vi.fn(async () => '{"at":1,"type":"claimed"}\n'),
  } satisfies InspectorOutbox;
  return { outbox, live: () => listener !== undefined };
}

afterEach(() => {
  document.body.replaceChildren();
});

async function mount() {
  defineOutboxInspector();
  const { outbox, live } = fakeOutbox();
  const inspector = document.createElement('outbox-inspector');
  inspector.outbox = outbox;
  document.body.append(inspector);
  await vi.waitFor(() => expect(inspector.querySelector('table')).not.toBeNull());
  return { inspector, outbox, live };
}

const button = (root: Element, label: string) =>
  [...root.querySelectorAll('button')].find((b) => b.textContent === label) as HTMLButtonElement;

describe('<outbox-inspector> (SPEC §23)', () => {
  it('shows health, rows with holder, fence, attempts and error, receipts and conflicts', async () => {
    const { inspector } = await mount();
    const text = inspector.textContent ?? '';
    expect(inspector.querySelector('[part=health]')?.getAttribute('data-stalled')).toBe('blocked');
    expect(text).toContain('stalled: blocked');
    // Ids are shortened on screen; the whole id is the title.
    expect(inspector.querySelector('tr[data-row="notes-aaaaaaaaaaaa"]')).not.toBeNull();
    expect(inspector.querySelector('[title="notes-aaaaaaaaaaaa"]')).not.toBeNull();
    expect(text).toContain('revision_conflict');
    expect(inspector.querySelector('[title="sw-000000000000000000000001"]')).not.toBeNull();
    expect(text).toContain('n_7');
    expect(text).toContain('3 → 4');
    const sending = inspector.querySelector('tr[data-row="notes-bbbbbbbbbbbb"]')?.textContent;
    expect(sending).toContain('3'); // fence
    expect(sending).toContain('sending');
    expect(sending).not.toContain('not current');
    // What users typed is text, never markup.
    expect(inspector.querySelector('img')).toBeNull();
    expect(text).toContain('…lert(1)>');
  });

  it('retries and discards a blocked row, restores a conflict and exports the trace', async () => {
    const { inspector, outbox } = await mount();
    URL.createObjectURL = vi.fn(() => 'blob:trace');
    button(inspector, 'Retry').click();
    button(inspector, 'Discard').click();
    button(inspector, 'Restore overwritten version').click();
    button(inspector, 'Export trace').click();
    await vi.waitFor(() => expect(outbox.exportTrace).toHaveBeenCalled());
    expect(outbox.retry).toHaveBeenCalledWith('notes-aaaaaaaaaaaa');
    expect(outbox.discard).toHaveBeenCalledWith('notes-aaaaaaaaaaaa');
    expect(outbox.restore).toHaveBeenCalledWith('notes-dddddddddddd');
  });

  it('shows an unsettled conflict entry as not settled yet, with when it was written, no versions and no restore (G5)', async () => {
    defineOutboxInspector();
    const { outbox } = fakeOutbox();
    const inspector = document.createElement('outbox-inspector');
    // What it overwrote is history only once the resend settled: nothing is read before.
    const readVersion = vi.fn(async () => 'a version');
    inspector.readVersion = readVersion;
    inspector.outbox = {
      ...outbox,
      conflicts: vi.fn(async () => [
        {
          successorId: 'notes-eeeeeeeeeeee',
          collection: 'notes',
          targetId: 'n_2',
          overwrittenRevision: 5,
          finalRevision: null,
          settledAt: NOW,
          historyRef: { supersededRevision: 5 },
          unsettled: true,
        } as unknown as ConflictLedgerEntry,
      ]),
    };
    document.body.append(inspector);
    await vi.waitFor(() => expect(inspector.querySelector('li.conflict')).not.toBeNull());
    const item = inspector.querySelector('li.conflict')!.textContent ?? '';
    expect(item).toContain('no answer read here settled it yet');
    expect(item).toContain('written');
    expect(item).not.toContain('applied as revision');
    expect(button(inspector, 'Restore overwritten version')).toBeUndefined();
    expect(inspector.querySelector('li.conflict [data-version]')).toBeNull();
    expect(readVersion).not.toHaveBeenCalled();
  });

  it('marks a claim held by no live sender as not current (its lease must end first)', async () => {
    const { inspector } = await mount();
    const sending = inspector.querySelector('tr[data-row="notes-bbbbbbbbbbbb"]')!;
    expect(sending.textContent).not.toContain('not current');
    const stale = {
      ...(await mount()).outbox,
      health: vi.fn(async () => ({
        ...health,
        senders: { worker: 'sw-000000000000000000000002' },
      })),
    };
    document.body.replaceChildren();
    const other = document.createElement('outbox-inspector');
    other.outbox = stale;
    document.body.append(other);
    await vi.waitFor(() =>
      expect(other.querySelector('tr[data-row="notes-bbbbbbbbbbbb"]')?.textContent).toContain(
        'not current',
      ),
    );
  });

  it('shows the overwritten and the final version the app reads, and reads each once', async () => {
    const { inspector } = await mount();
    const readVersion = vi.fn(async (_entry: ConflictLedgerEntry, revision: number) =>
      revision === 3 ? 'theirs' : null,
    );
    inspector.readVersion = readVersion;
    await vi.waitFor(() =>
      expect(inspector.querySelector('[data-version="overwritten"]')?.textContent).toContain(
        'theirs',
      ),
    );
    expect(inspector.querySelector('[data-version="final"]')?.textContent).toContain(
      'no longer kept by the server',
    );
    inspector.refresh();
    await vi.waitFor(() => expect(readVersion).toHaveBeenCalledTimes(2));
    expect(readVersion.mock.calls.map(([, revision]) => revision).sort()).toEqual([3, 4]);
  });

  it('tells the page what a person did and how it ended (outbox-inspector-action)', async () => {
    const { inspector, outbox } = await mount();
    outbox.discard.mockRejectedValueOnce(Object.assign(new Error('gone'), { code: 'not_found' }));
    const heard: Array<{ action: string; id: string; result?: unknown; error?: unknown }> = [];
    document.body.addEventListener('outbox-inspector-action', (event) => heard.push(event.detail));
    button(inspector, 'Restore overwritten version').click();
    button(inspector, 'Discard').click();
    await vi.waitFor(() => expect(heard).toHaveLength(2));
    expect(heard).toContainEqual({
      action: 'restore',
      id: 'notes-dddddddddddd',
      result: { id: 'x', targetId: 'n_1', outcome: 'queued' },
    });
    const failed = heard.find((event) => event.action === 'discard')!;
    expect((failed.error as { code: string }).code).toBe('not_found');
    // The failure also shows on the button, which can be pressed again.
    const discard = button(inspector, 'Discard');
    expect(discard.title).toBe('gone');
    expect(discard.disabled).toBe(false);
  });

  it('a refresh asked for while a change is being read does not draw the rows from before it', async () => {
    const { inspector, outbox } = await mount();
    expect(inspector.querySelector('[data-row="notes-bbbbbbbbbbbb"]')).not.toBeNull();
    const answers: Array<() => void> = [];
    outbox.health.mockImplementation(
      () => new Promise<OutboxHealth>((resolve) => answers.push(() => resolve(health))),
    );
    const deliver = outbox.subscribe.mock.calls.at(-1)![0];

    // The row being sent settles: the view delivers the rows without it, and while what goes
    // with them is read, the app (or a version read) asks for a refresh.
    deliver([rowView('notes-aaaaaaaaaaaa', 'blocked', { blockedCode: 'revision_conflict' })]);
    inspector.refresh();
    await vi.waitFor(() => expect(answers).toHaveLength(2));
    for (const answer of answers) answer();

    await vi.waitFor(() => expect(outbox.receipts).toHaveBeenCalledTimes(3));
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(inspector.querySelector('[data-row="notes-aaaaaaaaaaaa"]')).not.toBeNull();
    expect(inspector.querySelector('[data-row="notes-bbbbbbbbbbbb"]')).toBeNull();
  });

  it('stops its live view when it leaves the page', async () => {
    const { inspector, live } = await mount();
    expect(live()).toBe(true);
    inspector.remove();
    expect(live()).toBe(false);
  });
});
