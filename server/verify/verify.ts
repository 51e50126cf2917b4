import { randomBytes } from 'node:crypto';
import { PROBLEM, PROBLEM_CONTENT_TYPE } from 'sw-outbox/wire';
import { sha256Digest } from '../fingerprint.ts';
import { sendAndDrop, sendHeadOnly } from './raw-http.ts';

/**
 * `sw-outbox-verify` (SPEC §22.1): a conformance and chaos check of a server's idempotency
 * ledger, from the outside, over HTTP — what a server author runs in CI against their own
 * server. Each check sends what a sw-outbox client sends (keys, digests, `If-Match`, batches) or
 * what the network does to it (a lost answer, copies racing), and counts effects through a read
 * route, so "exactly one effect" is measured, not assumed.
 */

/** What the verifier needs to know of a server. */
export interface VerifyConfig {
  /** The server's origin (and base path), e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /**
   * How to be a principal: fixed headers (`{ "authorization": "Bearer …" }`), or a login route
   * whose JSON answer holds a token (`tokenField`, default `token`) sent as `Bearer <token>`.
   * `{random}` in the login body is replaced by a fresh value, so each run has its own principal.
   */
  auth:
    | { headers: Record<string, string> }
    | { loginPath: string; loginBody: unknown; tokenField?: string };
  /** A create route and a sample body; it answers 2xx with the record's `idField` (default `id`). */
  create: { path: string; body: unknown; method?: 'POST' | 'PUT'; idField?: string };
  /**
   * An update route with `If-Match` (`{id}` in the path is the created record's id) and a sample
   * body; the revision checks (G3, G4, G5) are skipped without it.
   */
  update?: { path: string; body: unknown; method?: 'PATCH' | 'PUT' };
  /** `GET` of one record (`{id}`); default the update path. */
  read?: { path: string };
  /** `GET` of the principal's records: a JSON array, or an object with it in `field` (default `items`). */
  count: { path: string; field?: string };
  /** The batch endpoint (SPEC §15.1); `null` when the server has none. Default `/sync/batch`. */
  batchPath?: string | null;
  /** A create body the server answers 5xx without any effect; the cached-500 check needs one. */
  failBody?: unknown;
  /** Concurrent copies of one key in the storm. Default 50. */
  concurrency?: number;
  /** How long the verifier waits for an answer that must come without the body. Default 2000. */
  headOnlyTimeoutMs?: number;
}

/** The guarantees of SPEC §0 the checks stand for, and the protocol's own rules. */
export type Guarantee = 'G2' | 'G3' | 'G4' | 'G5' | 'protocol';

/** One check's outcome. */
export interface CheckResult {
  name: string;
  guarantee: Guarantee;
  outcome: 'pass' | 'fail' | 'skip';
  detail: string;
}

/** Every check, and a verdict per guarantee. */
export interface VerifyReport {
  checks: CheckResult[];
  verdicts: Record<Guarantee, 'pass' | 'fail' | 'not checked'>;
  passed: boolean;
}

/** What a check reads of an answer. */
interface Reply {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: answers are arbitrary JSON
  json: any;
}

/** A failed expectation inside a check. */
class CheckFailed extends Error {}

function expect(condition: unknown, message: string): asserts condition {
  if (!condition) throw new CheckFailed(message);
}

const KNOWN_TYPES: ReadonlySet<string> = new Set(Object.values(PROBLEM));
const GUARANTEES: readonly Guarantee[] = ['G2', 'G3', 'G4', 'G5', 'protocol'];

function newKey(): string {
  return `verify-${randomBytes(12).toString('hex')}`;
}

function fill(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value).replaceAll('{random}', randomBytes(6).toString('hex')));
}

/** Runs every check against one server; `onCheck` hears each result as it comes. */
export async function runVerify(
  config: VerifyConfig,
  onCheck: (result: CheckResult) => void = () => {},
): Promise<VerifyReport> {
  const base = config.baseUrl.replace(/\/$/, '');
  const checks: CheckResult[] = [];
  const problems: string[] = [];
  let authHeaders: Record<string, string> = {};

  async function send(
    method: string,
    path: string,
    options: {
      key?: string | null;
      body?: string | null;
      ifMatch?: string;
      auth?: boolean;
      headers?: Record<string, string>;
    } = {},
  ): Promise<Reply> {
    const headers: Record<string, string> = { ...(options.auth === false ? {} : authHeaders) };
    if (options.key) headers['idempotency-key'] = `"${options.key}"`;
    if (options.body != null) {
      headers['content-type'] = 'application/json';
      headers['content-digest'] = sha256Digest(Buffer.from(options.body));
    }
    if (options.ifMatch !== undefined) headers['if-match'] = options.ifMatch;
    Object.assign(headers, options.headers);
    const response = await fetch(`${base}${path}`, {
      method,
      headers,
      body: options.body ?? undefined,
    });
    const text = await response.text();
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    const reply = { status: response.status, headers: response.headers, text, json };
    noteProblem(method, path, reply);
    return reply;
  }

  /** The protocol check: every error is `application/problem+json` with a known type. */
  function noteProblem(method: string, path: string, reply: Reply): void {
    if (reply.status < 400) return;
    const where = `${method} ${path.split('?')[0]} → ${reply.status}`;
    if (!reply.headers.get('content-type')?.startsWith(PROBLEM_CONTENT_TYPE)) {
      problems.push(`${where} is not ${PROBLEM_CONTENT_TYPE}`);
      return;
    }
    const type = String(reply.json?.type ?? '')
      .split('/')
      .pop()!;
    if (!KNOWN_TYPES.has(type))
      problems.push(`${where} has an unknown type ${JSON.stringify(reply.json?.type)}`);
  }

  async function check(
    name: string,
    guarantee: Guarantee,
    run: () => Promise<string | undefined>,
  ): Promise<boolean> {
    let result: CheckResult;
    try {
      result = { name, guarantee, outcome: 'pass', detail: (await run()) ?? '' };
    } catch (error) {
      const detail =
        error instanceof CheckFailed ? error.message : `error: ${(error as Error).message}`;
      result = { name, guarantee, outcome: 'fail', detail };
    }
    checks.push(result);
    onCheck(result);
    return result.outcome === 'pass';
  }

  function skip(name: string, guarantee: Guarantee, why: string): void {
    const result: CheckResult = { name, guarantee, outcome: 'skip', detail: why };
    checks.push(result);
    onCheck(result);
  }

  async function count(): Promise<number> {
    const reply = await send('GET', config.count.path);
    expect(reply.status === 200, `GET ${config.count.path} answered ${reply.status}`);
    const list = Array.isArray(reply.json)
      ? reply.json
      : reply.json?.[config.count.field ?? 'items'];
    expect(Array.isArray(list), `GET ${config.count.path} holds no list of records`);
    return list.length;
  }

  const createMethod = config.create.method ?? 'POST';
  const createBody = () => JSON.stringify(fill(config.create.body));
  const create = (key: string | null, body: string, auth = true) =>
    send(createMethod, config.create.path, { key, body, auth });

  // Who we are: a fresh principal when the server has a login route.
  const ready = await check('a principal to verify as', 'protocol', async () => {
    if ('headers' in config.auth) {
      authHeaders = config.auth.headers;
      return undefined;
    }
    const body = JSON.stringify(fill(config.auth.loginBody));
    const login = await send('POST', config.auth.loginPath, { body, auth: false });
    expect(login.status === 200, `login answered ${login.status}`);
    const token = login.json?.[config.auth.tokenField ?? 'token'];
    expect(typeof token === 'string', 'the login answer holds no token');
    authHeaders = { authorization: `Bearer ${token}` };
    return undefined;
  });
  if (!ready) return finish();

  // G2: a completed key is replayed, byte for byte.
  const key1 = newKey();
  const body1 = createBody();
  let first: Reply | undefined;
  await check(
    'replay of a completed key: same status and body, Idempotent-Replayed',
    'G2',
    async () => {
      const before = await count();
      first = await create(key1, body1);
      expect(
        first.status >= 200 && first.status < 300,
        `the create answered ${first.status}: ${first.text.slice(0, 200)}`,
      );
      expect(!first.headers.get('idempotent-replayed'), 'a first answer says Idempotent-Replayed');
      const again = await create(key1, body1);
      expect(
        again.status === first.status,
        `the replay answered ${again.status}, the first ${first.status}`,
      );
      expect(again.text === first.text, 'the replay body differs from the first answer');
      expect(
        again.headers.get('idempotent-replayed') === 'true',
        'the replay lacks Idempotent-Replayed: true',
      );
      const effects = (await count()) - before;
      expect(effects === 1, `two sends of one key made ${effects} records`);
      return undefined;
    },
  );
  const created = first && first.status < 300 ? first : undefined;

  await check('replay answered from the request head, before the body is read', 'G2', async () => {
    expect(created, 'needs the first create');
    const headers = {
      ...authHeaders,
      'content-type': 'application/json',
      'idempotency-key': `"${key1}"`,
      'content-digest': sha256Digest(Buffer.from(body1)),
    };
    const timeout = config.headOnlyTimeoutMs ?? 2000;
    const reply = await sendHeadOnly(
      base,
      createMethod,
      config.create.path,
      headers,
      Buffer.byteLength(body1),
      timeout,
    );
    expect(
      reply,
      `no answer in ${timeout} ms without the body: the ledger is read only after the body`,
    );
    expect(
      reply.status === created.status && reply.headers['idempotent-replayed'] === 'true',
      `answered ${reply.status} without Idempotent-Replayed`,
    );
    return undefined;
  });

  await check('same key with other bytes → 422 idempotency-key-reused', 'G2', async () => {
    expect(created, 'needs the first create');
    const reply = await create(key1, `${body1} `);
    expect(
      reply.status === 422 && reply.json?.type === PROBLEM.keyReused,
      `answered ${reply.status} ${reply.json?.type ?? ''}`,
    );
    return undefined;
  });

  await check(
    '401 with WWW-Authenticate before the ledger, even for a completed key',
    'G2',
    async () => {
      const reply = await create(key1, body1, false);
      expect(reply.status === 401, `answered ${reply.status} without credentials`);
      expect(reply.headers.get('www-authenticate'), 'the 401 has no WWW-Authenticate');
      return undefined;
    },
  );

  await check('missing key → 400 idempotency-key-missing', 'protocol', async () => {
    const reply = await create(null, createBody());
    expect(
      reply.status === 400 && reply.json?.type === PROBLEM.keyMissing,
      `answered ${reply.status} ${reply.json?.type ?? ''}`,
    );
    return undefined;
  });

  // G2: copies racing, an answer lost, a failure that must not be remembered.
  const copies = config.concurrency ?? 50;
  let overlapped = -1;
  await check(`${copies} concurrent copies of one key → one effect`, 'G2', async () => {
    const key = newKey();
    const body = createBody();
    const before = await count();
    const replies = await Promise.all(Array.from({ length: copies }, () => create(key, body)));
    const ok = replies.filter((reply) => reply.status >= 200 && reply.status < 300);
    const busy = replies.filter((reply) => reply.status === 409);
    const other = replies.filter((reply) => !ok.includes(reply) && !busy.includes(reply));
    expect(
      other.length === 0,
      `copies answered ${[...new Set(other.map((reply) => reply.status))].join(', ')}`,
    );
    expect(
      new Set(ok.map((reply) => reply.text)).size <= 1,
      'copies were answered with different bodies',
    );
    const effects = (await count()) - before;
    expect(effects === 1, `${copies} copies of one key made ${effects} records`);
    overlapped = busy.length;
    for (const reply of busy) {
      expect(
        reply.json?.type === PROBLEM.inProgress && reply.headers.get('retry-after'),
        '409 without request-in-progress and Retry-After',
      );
    }
    return `${ok.length} answered, ${busy.length} in progress`;
  });
  if (overlapped >= 0) {
    await check(
      'a copy of a key in progress → 409 request-in-progress with Retry-After',
      'G2',
      async () => (overlapped === 0 ? 'no copy overlapped a running one' : `${overlapped} copies`),
    );
  }

  await check(
    'connection dropped after the request was sent → the retry is answered from the ledger',
    'G2',
    async () => {
      const key = newKey();
      const body = createBody();
      const before = await count();
      await sendAndDrop(
        base,
        createMethod,
        config.create.path,
        {
          ...authHeaders,
          'content-type': 'application/json',
          'idempotency-key': `"${key}"`,
          'content-digest': sha256Digest(Buffer.from(body)),
        },
        body,
      );
      let retry: Reply | undefined;
      for (let attempt = 0; attempt < 20; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        retry = await create(key, body);
        if (retry.status !== 409) break;
      }
      expect(
        retry && retry.status >= 200 && retry.status < 300,
        `the retry answered ${retry?.status}`,
      );
      const effects = (await count()) - before;
      expect(effects === 1, `a dropped send and its retry made ${effects} records`);
      return retry.headers.get('idempotent-replayed') === 'true'
        ? 'replayed'
        : 'the first send never ran';
    },
  );

  if (config.failBody === undefined) {
    skip('a failed write leaves its key free: no cached 5xx', 'G2', 'no failBody configured');
  } else {
    await check('a failed write leaves its key free: no cached 5xx', 'G2', async () => {
      const key = newKey();
      const body = JSON.stringify(fill(config.failBody));
      const before = await count();
      for (let attempt = 0; attempt < 2; attempt++) {
        const reply = await create(key, body);
        expect(reply.status >= 500, `the failing sample answered ${reply.status}`);
        expect(
          reply.headers.get('idempotent-replayed') !== 'true',
          `the ${reply.status} was replayed from the ledger: a failure was stored`,
        );
      }
      const receipt = await send('GET', `/idempotency/${key}`);
      expect(
        receipt.status === 404,
        `the receipt lookup knows the failed key (${receipt.status}): a failure was stored`,
      );
      const effects = (await count()) - before;
      expect(effects === 0, `the failed write left ${effects} records`);
      return undefined;
    });
  }

  await check(
    'receipt lookup: GET /idempotency/<key>, and the retention published',
    'G2',
    async () => {
      expect(created, 'needs the first create');
      const receipt = await send('GET', `/idempotency/${key1}`);
      expect(receipt.status === 200, `GET /idempotency/<key> answered ${receipt.status}`);
      expect(
        receipt.json?.status === created.status &&
          JSON.stringify(receipt.json?.body) === JSON.stringify(created.json),
        'the receipt is not the stored answer',
      );
      const unknown = await send('GET', `/idempotency/${newKey()}`);
      expect(unknown.status === 404, `an unknown key answered ${unknown.status}`);
      const retention = await send('GET', '/idempotency');
      const seconds = retention.json?.retentionSeconds;
      expect(
        typeof seconds === 'number' && seconds >= 7 * 24 * 3600,
        `GET /idempotency publishes retentionSeconds ${seconds}`,
      );
      return `retention ${seconds} s`;
    },
  );

  // G3, G4, G5: revisions.
  if (!config.update) {
    for (const [name, guarantee] of REVISION_CHECKS)
      skip(name, guarantee, 'no update route configured');
  } else if (!created) {
    for (const [name, guarantee] of REVISION_CHECKS) skip(name, guarantee, 'no record was created');
  } else {
    await revisionChecks(config.update, created);
  }

  async function revisionChecks(update: NonNullable<VerifyConfig['update']>, record: Reply) {
    const id = String(record.json?.[config.create.idField ?? 'id'] ?? '');
    const path = update.path.replaceAll('{id}', encodeURIComponent(id));
    const readPath = (config.read?.path ?? update.path).replaceAll('{id}', encodeURIComponent(id));
    const method = update.method ?? 'PATCH';
    const write = (key: string, ifMatch?: string) =>
      send(method, path, { key, body: JSON.stringify(fill(update.body)), ifMatch });
    const revision = Number(/^"?(\d+)"?$/.exec(record.headers.get('etag') ?? '')?.[1] ?? 1);

    await check('If-Match required on an update → 428', 'G4', async () => {
      const reply = await write(newKey());
      expect(
        reply.status === 428 && reply.json?.type === PROBLEM.preconditionRequired,
        `answered ${reply.status} ${reply.json?.type ?? ''}`,
      );
      return undefined;
    });
    await check(
      'updates in order: each at the current revision moves it by one',
      'G4',
      async () => {
        for (const at of [revision, revision + 1]) {
          const reply = await write(newKey(), `"${at}"`);
          expect(
            reply.status >= 200 && reply.status < 300,
            `If-Match "${at}" answered ${reply.status}`,
          );
          expect(
            reply.headers.get('etag') === `"${at + 1}"`,
            `If-Match "${at}" answered ETag ${reply.headers.get('etag')}`,
          );
        }
        return undefined;
      },
    );
    const current = revision + 2;
    let conflict: Reply | undefined;
    await check('a stale If-Match → 412, and the record is unchanged', 'G3', async () => {
      const before = await send('GET', readPath);
      conflict = await write(newKey(), `"${revision}"`);
      expect(conflict.status === 412, `a stale If-Match answered ${conflict.status}`);
      const after = await send('GET', readPath);
      expect(after.status === 200, `GET ${readPath} answered ${after.status}`);
      expect(after.text === before.text, 'the refused write changed the record');
      return undefined;
    });
    await check('412 carries currentRevision, ETag and a readable history', 'G5', async () => {
      expect(conflict?.status === 412, 'needs the 412');
      const problem = conflict.json;
      expect(problem?.type === PROBLEM.revisionConflict, `the 412 has type ${problem?.type}`);
      expect(
        problem.currentRevision === current,
        `currentRevision ${problem.currentRevision}, the record is at ${current}`,
      );
      expect(
        conflict.headers.get('etag') === `"${current}"`,
        `the 412 has ETag ${conflict.headers.get('etag')}`,
      );
      expect(
        problem.history?.revision === current && typeof problem.history?.href === 'string',
        'the 412 names no history { revision, href }',
      );
      const version = await send('GET', String(problem.history.href));
      expect(version.status === 200, `GET ${problem.history.href} answered ${version.status}`);
      return undefined;
    });
    await check(
      'a conflict resend at the current revision is written once and replayed',
      'G5',
      async () => {
        const key = newKey();
        const resend = await write(key, `"${current}"`);
        expect(resend.status >= 200 && resend.status < 300, `the resend answered ${resend.status}`);
        const again = await write(key, `"${current}"`);
        expect(
          again.text === resend.text && again.headers.get('idempotent-replayed') === 'true',
          'the resend of the same key was not replayed',
        );
        return undefined;
      },
    );
  }

  // G2 in batches (SPEC §15.1).
  const batchPath = config.batchPath === undefined ? '/sync/batch' : config.batchPath;
  if (batchPath === null) {
    for (const name of BATCH_CHECKS) skip(name, 'G2', 'no batch endpoint');
  } else {
    // An item's path is the path on this origin (SPEC §15.1), base path included.
    const basePath = new URL(base).pathname.replace(/\/$/, '');
    const item = (key: string | null, body: string) => ({
      method: createMethod,
      path: `${basePath}${config.create.path}`,
      headers: {
        'content-type': 'application/json',
        'content-digest': sha256Digest(Buffer.from(body)),
        ...(key ? { 'idempotency-key': `"${key}"` } : {}),
      },
      body,
    });
    const items = [
      item(newKey(), createBody()),
      item(key1, body1),
      item(key1, `${body1} `),
      item(null, createBody()),
    ];
    const batch = (auth = true) =>
      send('POST', batchPath, { body: JSON.stringify({ items }), auth });
    let answer: Reply | undefined;
    let before = 0;
    await check(BATCH_CHECKS[0]!, 'G2', async () => {
      before = await count();
      answer = await batch();
      expect(answer.status === 200, `the batch answered ${answer.status}`);
      const statuses = (answer.json?.items ?? []).map((entry: { status: number }) => entry.status);
      expect(statuses.length === 4, `the batch answered ${statuses.length} items for 4`);
      expect(
        statuses[0] >= 200 && statuses[0] < 300 && statuses[2] === 422 && statuses[3] === 400,
        `items answered ${statuses.join(', ')}; expected 2xx, ${created?.status}, 422, 400`,
      );
      return undefined;
    });
    await check(BATCH_CHECKS[1]!, 'G2', async () => {
      const replayed = answer?.json?.items?.[1];
      expect(created && replayed, 'needs the first create and the batch');
      expect(
        replayed.status === created.status && replayed.body === created.text,
        'the key sent alone was not answered with its stored answer',
      );
      expect(
        replayed.headers?.['idempotent-replayed'] === 'true',
        'the item lacks Idempotent-Replayed',
      );
      return undefined;
    });
    await check(BATCH_CHECKS[2]!, 'G2', async () => {
      expect(answer?.status === 200, 'needs the batch');
      const again = await batch();
      const itemAgain = again.json?.items?.[0];
      expect(
        itemAgain?.body === answer.json.items[0].body &&
          itemAgain?.headers?.['idempotent-replayed'] === 'true',
        'the resent batch did not replay its first item',
      );
      const effects = (await count()) - before;
      expect(effects === 1, `a batch sent twice made ${effects} records`);
      return undefined;
    });
    await check(BATCH_CHECKS[3]!, 'G2', async () => {
      const reply = await batch(false);
      expect(
        reply.status === 401 && reply.headers.get('www-authenticate'),
        `a batch without credentials answered ${reply.status}`,
      );
      return undefined;
    });
  }

  await check('every error is application/problem+json with a known type', 'protocol', async () => {
    expect(problems.length === 0, problems.slice(0, 3).join('; '));
    return undefined;
  });

  return finish();

  function finish(): VerifyReport {
    const verdicts = {} as VerifyReport['verdicts'];
    for (const guarantee of GUARANTEES) {
      const mine = checks.filter((c) => c.guarantee === guarantee && c.outcome !== 'skip');
      verdicts[guarantee] =
        mine.length === 0
          ? 'not checked'
          : mine.every((c) => c.outcome === 'pass')
            ? 'pass'
            : 'fail';
    }
    return { checks, verdicts, passed: checks.every((c) => c.outcome !== 'fail') };
  }
}

const REVISION_CHECKS: ReadonlyArray<[string, Guarantee]> = [
  ['If-Match required on an update → 428', 'G4'],
  ['updates in order: each at the current revision moves it by one', 'G4'],
  ['a stale If-Match → 412, and the record is unchanged', 'G3'],
  ['412 carries currentRevision, ETag and a readable history', 'G5'],
  ['a conflict resend at the current revision is written once and replayed', 'G5'],
];

const BATCH_CHECKS = [
  'batch answered item by item: new 2xx, replay, 422 reused, 400 no key',
  'a key sent alone, then in a batch, is answered from the ledger',
  'a batch sent twice is replayed item by item, one effect',
  'a batch without credentials → 401 before the ledger',
];
