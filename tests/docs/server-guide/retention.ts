import { startSweeper } from 'sw-outbox-server/kit';
import { kit } from './kit.ts';

// Every 10 minutes, deletes ledger entries older than the retention (7 days unless
// `createOutboxKit({ retentionMs })` says more), 500 at a time.
const sweeper = startSweeper({ store: kit.ledger, retentionMs: kit.retentionSeconds * 1000 });
process.on('SIGTERM', () => sweeper.stop());
