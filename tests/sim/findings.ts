import type { Violation } from './oracles.ts';

/**
 * Names a violation after the finding it shows, from the oracle that fired and the notes the
 * oracles keep on the rows involved (what a row merged, whether it was enqueued without seeing
 * its record, whether it was claimed ahead of an earlier row). A first guess for reading the
 * trace, never a substitute for it.
 */
export interface Finding {
  id: string;
  title: string;
}

const F = (id: string, title: string): Finding => ({ id, title });

export const KNOWN: Record<string, Finding> = {
  F1: F('F1', 'a merged edit overtakes an edit in flight (G4)'),
  F2: F('F2', 'a request leaves, or stays on the wire, after its lease (G3/G4)'),
  F3: F('F3', 'a create the server applied is sent again (G2/G1)'),
  F4: F('F4', 'a waiting conflict successor loses its evidence (G5)'),
  F5: F('F5', 'an edit absorbs a quarantined corrupt row (G7/G1)'),
  F6: F('F6', "one owner reads another's rows (G6)"),
  F7: F('F7', 'a corrupt value with a numeric id is never quarantined (G7)'),
};

export function classify(v: Violation): Finding {
  const d = v.detail;
  if (v.guarantee === 'G6') return KNOWN.F6!;
  if (
    v.guarantee === 'G7' &&
    /number key|number \d/.test(d) &&
    /corrupt-not-quarantined|row-invisible/.test(v.check)
  )
    return KNOWN.F7!;
  if (v.check === 'quarantine-absorbed' || v.check === 'quarantine-rewritten') return KNOWN.F5!;
  if (['sent-after-lease', 'on-wire-after-lease', 'sent-without-claim'].includes(v.check))
    return KNOWN.F2!;
  if (v.guarantee === 'G5' && /merged [^:]+: /.test(d)) return KNOWN.F4!;
  if (v.guarantee === 'G2' || v.guarantee === 'G1') {
    if (/merged [^:]+: create blocked\/handler_failed/.test(d)) return KNOWN.F3!;
    if (
      v.check === 'cancelled-but-applied' &&
      /cancelled as create blocked\/handler_failed/.test(d)
    )
      return KNOWN.F3!;
    if (/merged [^:]+: update blocked\/handler_failed/.test(d))
      return F('F3u', 'an update the server applied is merged and sent again (G2; the rule of F3)');
    if (/merged [^:]+: \w+ queued\/\w+ attempted/.test(d) || /merged [^:]+: \w+ sending/.test(d))
      return F('S7', 'merging an attempted edit whose answer was lost applies it again (G2)');
  }
  if (v.guarantee === 'G4') {
    if (/beside a row in flight/.test(d) && /blocked/.test(d)) return KNOWN.F1!;
    if (/claimed by \S+ while the earlier/.test(d))
      return F(
        'S2',
        'rows of one record without a successor link go out of order across batches (G4)',
      );
    if (
      /\[edit-\d+: enqueued without seeing/.test(d) ||
      /\[notes-[0-9a-f-]+: enqueued without seeing/.test(d)
    )
      return F('N1', 'two enqueues of one record commit without seeing each other (G4)');
  }
  if (v.check === 'future-row-rewritten')
    return F('S17', 'a row of a newer format version is quarantined instead of left alone (§17)');
  if (v.check === 'unclear-error' && /invalid_intent/.test(d))
    return F('N2', 'an edit of a pending create racing its claim fails with invalid_intent (G7)');
  return F('?', `${v.guarantee} ${v.check}`);
}
