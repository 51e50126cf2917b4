import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyMain } from '../../server/verify/cli.ts';
import { runVerify, type VerifyConfig } from '../../server/verify/verify.ts';
import { PROBLEM_CONTENT_TYPE } from '../../shared/wire/protocol.ts';
import { dropSchema, newSchema, PG_SKIP_REASON, PG_URL, startTestServer } from './helpers.ts';
import { type Flaw, type RunningTodoServer, startTodoServer } from './kit-verify-servers.ts';

/**
 * `sw-outbox-verify` (SPEC §22.1) against servers that keep §15 — a kit app and the reference
 * server — and against three that break it, each of which must fail, naming the check that broke.
 */

/** The verifier's configuration for the todo app of kit-verify-servers.ts. */
function todoConfig(url: string): VerifyConfig {
  return {
    baseUrl: url,
    auth: {
      headers: { authorization: `Bearer verify-${Math.random().toString(36).slice(2, 10)}` },
    },
    create: { path: '/api/todos', body: { title: 'verify' } },
    update: { path: '/api/todos/{id}', body: { done: true } },
    count: { path: '/api/todos' },
    failBody: { title: 'explode' },
    concurrency: 50,
  };
}

const failed = (report: Awaited<ReturnType<typeof runVerify>>) =>
  report.checks.filter((check) => check.outcome === 'fail').map((check) => check.name);

describe('sw-outbox-verify', () => {
  describe('on a kit app (Hono, SQLite)', () => {
    let server: RunningTodoServer;
    beforeAll(async () => {
      server = await startTodoServer();
    });
    afterAll(() => server?.close());

    it('passes every check, with a verdict of pass for G2, G3, G4 and G5', async () => {
      const report = await runVerify(todoConfig(server.url));
      expect(failed(report)).toEqual([]);
      expect(report.checks.filter((check) => check.outcome === 'skip')).toEqual([]);
      expect(report.verdicts).toEqual({
        G2: 'pass',
        G3: 'pass',
        G4: 'pass',
        G5: 'pass',
        protocol: 'pass',
      });
    });

    it('prints one line per check and a verdict per guarantee, and exits 0', async () => {
      const lines: string[] = [];
      const code = await verifyMain(
        [
          server.url,
          '--token',
          'verify-cli',
          '--create',
          '/api/todos',
          '--create-body',
          '{"title":"cli"}',
          '--update',
          '/api/todos/{id}',
          '--update-body',
          '{"done":true}',
          '--count',
          '/api/todos',
          '--fail-body',
          '{"title":"explode"}',
          '--concurrency',
          '10',
        ],
        (line) => lines.push(line),
      );
      expect(code).toBe(0);
      const output = lines.join('\n');
      expect(output).toContain('✓ [G2] replay of a completed key');
      expect(output).toContain('G2 at most one effect: pass');
      expect(output).toContain('G5 durable conflict resend: pass');
      expect(output).toContain('all checks passed');
    });

    it('answers bad arguments with usage and exit code 2', async () => {
      const lines: string[] = [];
      expect(await verifyMain(['--create', '/x'], (line) => lines.push(line))).toBe(2);
      expect(lines.join('\n')).toContain('usage: sw-outbox-verify <base-url>');
    });
  });

  it.skipIf(PG_SKIP_REASON !== undefined)('passes on a kit app on PostgreSQL', async () => {
    const schema = newSchema('kit_verify');
    const server = await startTodoServer(undefined, { connectionString: PG_URL, schema });
    try {
      const report = await runVerify(todoConfig(server.url));
      expect(failed(report)).toEqual([]);
      expect(report.verdicts).toMatchObject({ G2: 'pass', G3: 'pass', G4: 'pass', G5: 'pass' });
    } finally {
      await server.close();
      await dropSchema(schema);
    }
  });

  const referenceStores = [
    ['SQLite', () => ({ kind: 'sqlite' as const, path: ':memory:' })],
    ...(PG_SKIP_REASON === undefined
      ? [
          [
            'PostgreSQL',
            () => ({
              kind: 'postgres' as const,
              connectionString: PG_URL,
              schema: newSchema('ref_verify'),
            }),
          ] as const,
        ]
      : []),
  ] as const;
  it.each(referenceStores)(
    'passes on the reference server on %s, logging in for a fresh principal',
    async (_name, store) => {
      const config = store();
      const server = await startTestServer({ store: config });
      try {
        const lines: string[] = [];
        const code = await verifyMain(
          [
            server.url,
            '--login',
            '/auth/login',
            '--create',
            '/api/notes',
            '--create-body',
            '{"title":"verify"}',
            '--update',
            '/api/notes/{id}',
            '--update-body',
            '{"title":"again"}',
            '--count',
            '/api/notes',
          ],
          (line) => lines.push(line),
        );
        expect(code, lines.join('\n')).toBe(0);
        // The reference server has no request that fails on purpose: that one check is skipped.
        expect(lines.filter((line) => line.startsWith('-'))).toEqual([
          '- [G2] a failed write leaves its key free: no cached 5xx (skipped: no failBody configured)',
        ]);
      } finally {
        await server.close();
        if (config.kind === 'postgres') await dropSchema(config.schema);
      }
    },
  );

  // What each flaw must fail, and what it may fail too, by timing: a retry of a dropped send
  // that reaches the other instance inside the claim's gap makes a second record as well.
  describe.each<[Flaw, string[], string[]]>([
    [
      'claim-outside-transaction',
      ['50 concurrent copies of one key → one effect'],
      ['connection dropped after the request was sent → the retry is answered from the ledger'],
    ],
    [
      'no-check-before-body',
      ['replay answered from the request head, before the body is read'],
      [],
    ],
    [
      'cached-500',
      [
        'a failed write leaves its key free: no cached 5xx',
        // The stored 500 is replayed as the ledger keeps answers: JSON, not a problem.
        'every error is application/problem+json with a known type',
      ],
      [],
    ],
  ])('on a server with the flaw %s', (flaw, broken, alsoBroken) => {
    let server: RunningTodoServer;
    beforeAll(async () => {
      server = await startTodoServer(flaw);
    });
    afterAll(() => server?.close());

    it('fails exactly the checks its flaw breaks, with G2 FAIL', async () => {
      const report = await runVerify(todoConfig(server.url));
      const failures = failed(report);
      expect(failures.filter((name) => !alsoBroken.includes(name))).toEqual(broken);
      expect(report.verdicts).toMatchObject({ G2: 'fail', G3: 'pass', G4: 'pass', G5: 'pass' });
      expect(report.passed).toBe(false);
    });
  });

  it('sends every request and batch item under the base path of baseUrl, the raw ones (head only, dropped) too', async () => {
    const seen: string[] = [];
    // A server mounted at /app: creates answer 201, the list is empty, batch items 404, else 404.
    const server = createServer((request, response) => {
      seen.push(`${request.method} ${request.url}`);
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      const json = (status: number, body: string, type = 'application/json') => {
        response.writeHead(status, { 'content-type': type, connection: 'close' });
        response.end(body);
      };
      const notFound = '{"type":"not-found","status":404}';
      if (request.url === '/app/api/todos' && request.method === 'POST') {
        return json(201, '{"id":"t1"}');
      }
      if (request.url === '/app/api/todos') return json(200, '{"items":[]}');
      if (request.url !== '/app/sync/batch') return json(404, notFound, PROBLEM_CONTENT_TYPE);
      request.on('end', () => {
        const { items } = JSON.parse(Buffer.concat(chunks).toString()) as {
          items: Array<{ path: string }>;
        };
        for (const item of items) seen.push(`item ${item.path}`);
        const answer = {
          status: 404,
          headers: { 'content-type': PROBLEM_CONTENT_TYPE },
          body: notFound,
        };
        json(200, JSON.stringify({ items: items.map(() => answer) }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      await runVerify({
        ...todoConfig(`http://127.0.0.1:${port}/app`),
        update: undefined,
        failBody: undefined,
        concurrency: 2,
        headOnlyTimeoutMs: 200,
      });
    } finally {
      server.closeAllConnections();
      server.close();
    }
    expect(seen.filter((line) => line.endsWith(' /app/api/todos')).length).toBeGreaterThan(4);
    expect(seen.filter((line) => line.startsWith('item ')).length).toBeGreaterThan(0);
    expect(seen.filter((line) => !line.split(' ')[1]!.startsWith('/app/'))).toEqual([]);
  });
});
