import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseVerifyArgs } from '../../server/verify/cli.ts';

/**
 * The guides in docs/ show the example's real code (SPEC §22): a code block that follows an
 * `<!-- example: <path> -->` marker must be that file of the repository, byte for byte, so a
 * guide cannot drift from the example `npm test` builds and drives. The server guide's
 * TypeScript blocks are all such files, each compiled: its snippets in
 * tests/docs/server-guide/ by the repository's `tsc`, the server examples by their own.
 */
const ROOT = join(import.meta.dirname, '..', '..');
const MARKER = /<!-- example: (\S+) -->\n```[a-z]*\n([\s\S]*?)\n```/g;

const guides = readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md'));
const quoted = guides.flatMap((guide) =>
  [...readFileSync(join(ROOT, 'docs', guide), 'utf8').matchAll(MARKER)].map((match) => ({
    guide,
    path: match[1] ?? '',
    block: match[2] ?? '',
  })),
);

describe('the guides', () => {
  it('quote the Vite example file by file', () => {
    const files = quoted.filter((q) => q.guide === 'vite-pwa.md').map((q) => q.path);
    expect(files).toEqual(
      expect.arrayContaining([
        'examples/vite-pwa/package.json',
        'examples/vite-pwa/vite.config.ts',
        'examples/vite-pwa/src/sw.ts',
        'examples/vite-pwa/src/main.tsx',
        'examples/vite-pwa/src/App.tsx',
        'examples/vite-pwa/tsconfig.sw.json',
      ]),
    );
  });

  it.each(quoted.map((q) => [`${q.guide} → ${q.path}`, q] as const))(
    'show the file as it is: %s',
    (_name, { path, block }) => {
      expect(block).toBe(readFileSync(join(ROOT, path), 'utf8').replace(/\n$/, ''));
    },
  );

  it('show the record statuses with the labels of docs/statuses.md in the Vite example', () => {
    const statuses = readFileSync(join(ROOT, 'docs', 'statuses.md'), 'utf8');
    const records = statuses.slice(
      statuses.indexOf('| record status |'),
      statuses.indexOf('## Rows'),
    );
    const documented = Object.fromEntries(
      [...records.matchAll(/^\| `(\w+)` \| [^|]+ \| ([^|]+) \|$/gm)].map((m) => [
        m[1],
        m[2]!.trim(),
      ]),
    );
    const app = readFileSync(join(ROOT, 'examples', 'vite-pwa', 'src', 'App.tsx'), 'utf8');
    const table = app.slice(
      app.indexOf('const LABEL'),
      app.indexOf('};', app.indexOf('const LABEL')),
    );
    const shown = Object.fromEntries(
      [...table.matchAll(/^ {2}(\w+): '([^']+)',$/gm)].map((m) => [m[1], m[2]]),
    );
    expect(Object.keys(documented)).toHaveLength(7);
    expect(shown).toEqual(documented);
  });

  it('are each linked from the README', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    for (const guide of guides) expect(readme).toContain(`docs/${guide}`);
    expect(readme).toContain('docs/api/README.md');
  });

  describe('docs/server.md', () => {
    const guide = readFileSync(join(ROOT, 'docs', 'server.md'), 'utf8');
    const blocks = [...guide.matchAll(/(<!-- example: (\S+) -->\n)?```([a-z]*)\n([\s\S]*?)\n```/g)];
    const COMPILED =
      /^(tests\/docs\/server-guide\/[\w.-]+\.(ts|json)|examples\/(express-postgres|hono-sqlite)\/src\/[\w-]+\.ts)$/;

    it('shows every TypeScript and JSON block as a file that a test compiles or parses', () => {
      const code = blocks.filter((block) => ['ts', 'json'].includes(block[3]!));
      expect(code.length).toBeGreaterThan(5);
      for (const block of code) {
        expect(block[2], block[4]!.slice(0, 120)).toMatch(COMPILED);
      }
    });

    it('gives the verifier command lines it accepts', () => {
      const commands = blocks
        .filter((block) => block[3] === 'sh')
        .flatMap((block) => block[4]!.replaceAll('\\\n', ' ').split('\n'))
        .filter((line) => line.startsWith('npx sw-outbox-verify '));
      expect(commands.length).toBeGreaterThan(0);
      for (const command of commands) {
        const args = [...command.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]!);
        const config = parseVerifyArgs(args.slice(2));
        expect(config).toMatchObject({
          create: { path: '/api/todos' },
          count: { path: '/api/todos' },
        });
      }
    });

    it('gives a verifier configuration file it accepts', () => {
      const config = parseVerifyArgs([
        '--config',
        join(ROOT, 'tests', 'docs', 'server-guide', 'verify.config.json'),
      ]);
      expect(config).toMatchObject({
        baseUrl: 'http://127.0.0.1:3000',
        create: { path: '/api/todos', body: { title: 'verify' } },
        update: { path: '/api/todos/{id}' },
        failBody: { title: 'explode' },
      });
    });
  });
});
