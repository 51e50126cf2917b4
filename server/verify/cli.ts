import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { type CheckResult, type Guarantee, runVerify, type VerifyConfig } from './verify.ts';

/** `sw-outbox-verify --help`. */
export const VERIFY_USAGE = `usage: sw-outbox-verify <base-url> [options]

Checks a server's idempotency ledger from the outside (SPEC §15, §15.1): replays, a key reused,
concurrent copies of one key, a lost answer, a failure that must not be cached, batches item by
item, If-Match and 412 with history, 401 before the ledger, problem types. One line per check,
a verdict per guarantee; exit code 1 when any check fails.

  --config <file>         a JSON VerifyConfig; the flags below override it
  --token <token>         send Authorization: Bearer <token>
  --login <path>          log in: POST <path> with --login-body, Bearer <answer.token>
  --login-body <json>     default {"user":"verify-{random}"}
  --create <path>         create route (POST), e.g. /api/notes
  --create-body <json>    its sample body, e.g. {"title":"verify"}
  --update <path>         update route (PATCH, If-Match), {id} the created id
  --update-body <json>    its sample body
  --count <path>          GET of the principal's records (a list, or { items: [...] })
  --batch <path>          the batch endpoint (default /sync/batch)
  --no-batch              the server has no batch endpoint
  --fail-body <json>      a create body the server answers 5xx without effect
  --concurrency <n>       copies in the storm (default 50)
`;

const NAMES: Record<Guarantee, string> = {
  G2: 'G2 at most one effect',
  G3: 'G3 no stale overwrite',
  G4: 'G4 order per record',
  G5: 'G5 durable conflict resend',
  protocol: 'protocol (SPEC §15)',
};

/** The configuration the arguments describe; throws `Error` with a message for bad ones. */
export function parseVerifyArgs(argv: readonly string[]): VerifyConfig | 'help' {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      help: { type: 'boolean', short: 'h' },
      config: { type: 'string' },
      token: { type: 'string' },
      login: { type: 'string' },
      'login-body': { type: 'string' },
      create: { type: 'string' },
      'create-body': { type: 'string' },
      update: { type: 'string' },
      'update-body': { type: 'string' },
      count: { type: 'string' },
      batch: { type: 'string' },
      'no-batch': { type: 'boolean' },
      'fail-body': { type: 'string' },
      concurrency: { type: 'string' },
    },
  });
  if (values.help) return 'help';
  const file: Partial<VerifyConfig> = values.config
    ? JSON.parse(readFileSync(values.config, 'utf8'))
    : {};
  const json = (name: string, text: string | undefined) => {
    if (text === undefined) return undefined;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new Error(`--${name} is not JSON`);
    }
  };
  const baseUrl = positionals[0] ?? file.baseUrl;
  if (!baseUrl) throw new Error('the base URL is missing');
  let auth = file.auth;
  if (values.token) auth = { headers: { authorization: `Bearer ${values.token}` } };
  if (values.login) {
    const loginBody = json('login-body', values['login-body']) ?? { user: 'verify-{random}' };
    auth = { loginPath: values.login, loginBody };
  }
  if (!auth) throw new Error('say how to authenticate: --token, --login or auth in --config');
  const createPath = values.create ?? file.create?.path;
  const createBody = json('create-body', values['create-body']) ?? file.create?.body;
  if (!createPath || createBody === undefined)
    throw new Error('--create and --create-body are required');
  const countPath = values.count ?? file.count?.path;
  if (!countPath) throw new Error('--count is required: the verifier counts effects through it');
  const updatePath = values.update ?? file.update?.path;
  const updateBody = json('update-body', values['update-body']) ?? file.update?.body;
  const concurrency = values.concurrency ? Number(values.concurrency) : file.concurrency;
  if (concurrency !== undefined && !(Number.isInteger(concurrency) && concurrency >= 2)) {
    throw new Error('--concurrency must be an integer of at least 2');
  }
  return {
    ...file,
    baseUrl,
    auth,
    create: { ...file.create, path: createPath, body: createBody },
    update: updatePath ? { ...file.update, path: updatePath, body: updateBody ?? {} } : undefined,
    count: { ...file.count, path: countPath },
    batchPath: values['no-batch'] ? null : (values.batch ?? file.batchPath),
    failBody: json('fail-body', values['fail-body']) ?? file.failBody,
    concurrency,
  };
}

/** One line of output for a check. */
export function formatCheck(result: CheckResult): string {
  const mark = { pass: '✓', fail: '✗', skip: '-' }[result.outcome];
  const detail = result.detail
    ? result.outcome === 'skip'
      ? ` (skipped: ${result.detail})`
      : ` — ${result.detail}`
    : '';
  return `${mark} [${result.guarantee}] ${result.name}${detail}`;
}

/** Runs the verifier as the bin does: prints, and resolves with the exit code. */
export async function verifyMain(
  argv: readonly string[],
  out: (line: string) => void = (line) => process.stdout.write(`${line}\n`),
): Promise<number> {
  let config: VerifyConfig | 'help';
  try {
    config = parseVerifyArgs(argv);
  } catch (error) {
    out(`sw-outbox-verify: ${(error as Error).message}\n\n${VERIFY_USAGE}`);
    return 2;
  }
  if (config === 'help') {
    out(VERIFY_USAGE);
    return 0;
  }
  out(`verifying ${config.baseUrl}`);
  const report = await runVerify(config, (result) => out(formatCheck(result)));
  out('');
  for (const [guarantee, verdict] of Object.entries(report.verdicts)) {
    out(`${NAMES[guarantee as Guarantee]}: ${verdict === 'fail' ? 'FAIL' : verdict}`);
  }
  out(report.passed ? 'all checks passed' : 'some checks failed');
  return report.passed ? 0 : 1;
}
