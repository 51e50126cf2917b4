import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type pg from 'pg';
import { HEADER, PROBLEM, parseIdempotencyKey } from 'sw-outbox/wire';

/**
 * The contract's floor on PostgreSQL (SPEC §15, §19): a create with the statements the kit's
 * ledger needs and nothing else, written by hand on raw `pg` — check 1's lookup before the body,
 * then one transaction on one pooled client in pipeline mode with `BEGIN`, the claim, the app's
 * insert, the stored answer (over this transaction's own claim) and `COMMIT` leaving together, as
 * the kit sends them for a deferred insert. Two round trips, where the bare write is one
 * autocommit insert. What the kit costs above this is its own code; what this costs above the
 * bare write is what a ledger must do in PostgreSQL.
 *
 * It keeps the contract for this one route: the key (400), the declared digest checked against
 * the body (400), a completed key replayed or 422, a key in progress here 409, a claim lost to
 * another process answered from the ledger. Headers are as the kit sends them.
 */

/** What the floor shares with the bare route: auth, validation and the note's answer. */
export interface FloorRouteOptions<N> {
  pool: pg.Pool;
  schema: string;
  principalOf(header: string | undefined): string | null;
  readNote(body: unknown): { ok: true; value: N } | { ok: false };
  newId(): string;
  noteJson(id: string, note: N): unknown;
  insertSql: string;
  insertValues(owner: string, id: string, note: N, now: number): unknown[];
  /** `Idempotency-Retention` every answer carries, and the batch `Link` the kit advertises. */
  retentionSeconds: number;
  batchLink: string;
}

interface Stored {
  fingerprint: string;
  status: number;
  etag: string | null;
  body: string;
}

const JSON_TYPE = 'application/json; charset=utf-8';
const PROBLEM_TYPE = 'application/problem+json; charset=utf-8';
const DIGEST = /^sha-256=:([A-Za-z0-9+/]{43}=):$/;
const LOCK_TIMEOUT_MS = 5000;
/** PostgreSQL's `lock_not_available`: `lock_timeout` ran out. */
const LOCK_TIMEOUT = '55P03';

/** The floor's `POST /api/notes` as a `node:http` handler. */
export function floorRoute<N>(options: FloorRouteOptions<N>) {
  const { pool, principalOf, readNote } = options;
  const ledger = `"${options.schema}".idempotency_ledger`;
  const lookupSql = `SELECT fingerprint, status, etag, body FROM ${ledger} WHERE principal = $1 AND key = $2`;
  const begin = `BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL lock_timeout = ${LOCK_TIMEOUT_MS}`;
  const inflight = new Map<string, string>();
  const common = {
    [HEADER.retention]: String(options.retentionSeconds),
    [HEADER.link]: options.batchLink,
  };

  function send(response: ServerResponse, status: number, body: string, extra = {}): void {
    response.writeHead(status, {
      'content-type': status < 300 ? JSON_TYPE : PROBLEM_TYPE,
      'content-length': Buffer.byteLength(body),
      ...common,
      ...extra,
    });
    response.end(body);
  }
  const problem = (response: ServerResponse, status: number, type: string, extra = {}) =>
    send(response, status, JSON.stringify({ type, status }), extra);

  function replay(response: ServerResponse, stored: Stored, fingerprint: string): void {
    if (stored.fingerprint !== fingerprint) {
      problem(response, 422, PROBLEM.keyReused);
      return;
    }
    const etag = stored.etag === null ? {} : { [HEADER.etag]: stored.etag };
    send(response, stored.status, stored.body, { ...etag, [HEADER.replayed]: 'true' });
  }

  async function create(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (request.method !== 'POST' || request.url !== '/api/notes') {
      return problem(response, 404, PROBLEM.notFound);
    }
    const owner = principalOf(request.headers.authorization);
    if (!owner)
      return problem(response, 401, PROBLEM.authRequired, { 'www-authenticate': 'Bearer' });
    const parsed = parseIdempotencyKey(request.headers[HEADER.idempotencyKey] as string);
    if (parsed.kind !== 'ok')
      return problem(
        response,
        400,
        parsed.kind === 'missing' ? PROBLEM.keyMissing : PROBLEM.keyMalformed,
      );
    const { key } = parsed;
    const declared = DIGEST.exec((request.headers[HEADER.contentDigest] as string) ?? '')?.[1];
    if (declared === undefined) return problem(response, 400, PROBLEM.digestMismatch);
    const fingerprint = `POST /api/notes\n\nsha-256=:${declared}:`;
    const id = `${owner}\n${key}`;
    const holder = inflight.get(id);
    if (holder !== undefined) {
      if (holder !== fingerprint) return problem(response, 422, PROBLEM.keyReused);
      return problem(response, 409, PROBLEM.inProgress, { [HEADER.retryAfter]: '1' });
    }
    // Check 1, before the body is read.
    const stored = (await pool.query<Stored>(lookupSql, [owner, key])).rows[0];
    if (stored) return replay(response, stored, fingerprint);

    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const bytes = Buffer.concat(chunks);
    if (createHash('sha256').update(bytes).digest('base64') !== declared) {
      return problem(response, 400, PROBLEM.digestMismatch);
    }
    let body: unknown;
    try {
      body = JSON.parse(bytes.toString('utf8'));
    } catch {
      return problem(response, 400, PROBLEM.malformedBody);
    }
    const note = readNote(body);
    if (!note.ok) return problem(response, 422, PROBLEM.validationFailed);
    if (inflight.has(id)) return problem(response, 409, PROBLEM.inProgress);
    inflight.set(id, fingerprint);
    try {
      await write(response, owner, key, fingerprint, note.value);
    } finally {
      inflight.delete(id);
    }
  }

  /** Check 3 and the write: one transaction, its statements pipelined in one round trip. */
  async function write(
    response: ServerResponse,
    owner: string,
    key: string,
    fingerprint: string,
    note: N,
  ): Promise<void> {
    const now = Date.now();
    const noteId = options.newId();
    const answer = JSON.stringify(options.noteJson(noteId, note));
    const client = await pool.connect();
    let broken = false;
    try {
      const o = client.escapeLiteral(owner);
      const k = client.escapeLiteral(key);
      const claim = client.query(
        `${begin}; INSERT INTO ${ledger} (principal, key, fingerprint, status, etag, body, created_at)
        VALUES (${o}, ${k}, ${client.escapeLiteral(fingerprint)}, 0, NULL, '', ${now}) ON CONFLICT DO NOTHING`,
      ) as unknown as Promise<pg.QueryResult[]>;
      const insert = client.query(
        options.insertSql,
        options.insertValues(owner, noteId, note, now),
      );
      // Fails (division by zero) unless this transaction's own claim is there to complete.
      const commit = client.query(
        `WITH done AS (UPDATE ${ledger} SET status = 201, etag = '"1"', body = ${client.escapeLiteral(answer)}
        WHERE principal = ${o} AND key = ${k} AND status = 0 RETURNING 1)
        SELECT 1 / count(*)::int FROM done; COMMIT`,
      );
      const [claimed, inserted, committed] = await Promise.allSettled([claim, insert, commit]);
      if (claimed.status === 'rejected') {
        // Another process held the key past lock_timeout: in progress, as the kit answers it.
        if ((claimed.reason as { code?: string }).code !== LOCK_TIMEOUT) throw claimed.reason;
        await client.query('ROLLBACK');
        return problem(response, 409, PROBLEM.inProgress, { [HEADER.retryAfter]: '1' });
      }
      if ((claimed.value.at(-1)?.rowCount ?? 0) === 0) {
        await client.query('ROLLBACK');
        const stored = (await client.query<Stored>(lookupSql, [owner, key])).rows[0];
        if (stored) return replay(response, stored, fingerprint);
        return problem(response, 409, PROBLEM.inProgress, { [HEADER.retryAfter]: '1' });
      }
      if (inserted.status === 'rejected') throw inserted.reason;
      if (committed.status === 'rejected') throw committed.reason;
      send(response, 201, answer, { [HEADER.etag]: '"1"' });
    } catch (error) {
      await client.query('ROLLBACK').catch(() => (broken = true));
      throw error;
    } finally {
      client.release(broken);
    }
  }

  return (request: IncomingMessage, response: ServerResponse): void => {
    create(request, response).catch(() => {
      if (!response.headersSent) problem(response, 500, PROBLEM.internal);
    });
  };
}
