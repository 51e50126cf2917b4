import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, dropSchema, newKey, newSchema, newUser, PG_SKIP_REASON, PG_URL } from './helpers.ts';
import { type ServerChild, spawnServer } from './process.ts';

if (PG_SKIP_REASON) console.warn(`two-instance PostgreSQL test skipped: ${PG_SKIP_REASON}`);

/** SPEC §15: several instances share one PostgreSQL ledger; a storm split across them is one effect. */
describe.skipIf(PG_SKIP_REASON !== undefined)(
  'two server processes on one PostgreSQL ledger',
  () => {
    const schema = newSchema('instances');
    let servers: ServerChild[] = [];

    beforeAll(async () => {
      const args = [
        '--port',
        '0',
        '--db',
        PG_URL,
        '--pg-schema',
        schema,
        '--pool-size',
        '4',
        '--admin',
      ];
      servers = await Promise.all([spawnServer(args), spawnServer(args)]);
    });
    afterAll(async () => {
      await Promise.all(servers.map((server) => server.stop()));
      await dropSchema(schema);
    });

    const effects = async (user: string) => {
      const [a, b] = await Promise.all(
        servers.map(async (server) => (await Api.login(server.url, user)).stats(user)),
      );
      return {
        notes: a!.store.notes,
        revisionSum: a!.store.revisionSum,
        applied: a!.process.effects + b!.process.effects,
      };
    };

    it('applies a create storm split across both instances exactly once', async () => {
      const user = newUser('split');
      const apis = await Promise.all(servers.map((server) => Api.login(server.url, user)));
      const key = newKey();
      const answers = await Promise.all(
        Array.from({ length: 60 }, (_, i) => apis[i % 2]!.create('one plate', { key })),
      );
      expect(answers.every((answer) => answer.status === 201 || answer.status === 409)).toBe(true);
      const bodies = new Set(
        answers.filter((answer) => answer.status === 201).map((answer) => answer.text),
      );
      expect(bodies.size).toBe(1);
      expect(await effects(user)).toEqual({ notes: 1, revisionSum: 1, applied: 1 });
    });

    it('applies an update storm split across both instances exactly once', async () => {
      const user = newUser('split');
      const apis = await Promise.all(servers.map((server) => Api.login(server.url, user)));
      const created = await apis[0]!.create('counter');
      const key = newKey();
      const answers = await Promise.all(
        Array.from({ length: 60 }, (_, i) =>
          apis[i % 2]!.patch(created.json.id, 1, { body: 'once' }, { key }),
        ),
      );
      expect(answers.every((answer) => answer.status === 200 || answer.status === 409)).toBe(true);
      expect(await effects(user)).toEqual({ notes: 1, revisionSum: 2, applied: 2 });
    });
  },
);
