import type { FlushReport } from '../model/page-api.ts';

/** Thrown inside a flush to stop it for a device-side reason (never marks the network offline). */
export class FlushStop extends Error {
  constructor(readonly reason: NonNullable<FlushReport['stopped']>) {
    super(reason);
  }
}
