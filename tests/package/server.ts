/**
 * A Node program that runs the reference server from the `sw-outbox-server` package's declarations.
 */
import { startServer } from 'sw-outbox-server';

export async function run(): Promise<string> {
  const server = await startServer({ port: 0, store: { kind: 'sqlite', path: ':memory:' } });
  // @ts-expect-error the url is a string
  const wrong: number = server.url;
  return `${wrong}`;
}
