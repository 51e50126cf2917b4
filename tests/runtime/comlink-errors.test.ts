import { expose, wrap } from 'comlink';
import { afterEach, describe, expect, it } from 'vitest';
import { OutboxError } from '../../shared/model/errors.ts';
import { installComlinkErrors } from '../../shared/runtime/comlink-errors.ts';

describe('errors across Comlink (SPEC §13)', () => {
  const channels: MessageChannel[] = [];
  afterEach(() => {
    for (const channel of channels.splice(0)) {
      channel.port1.close();
      channel.port2.close();
    }
  });

  const connect = <T>(api: T) => {
    installComlinkErrors();
    const channel = new MessageChannel();
    channels.push(channel);
    expose(api, channel.port1 as unknown as Parameters<typeof expose>[1]);
    return wrap<T>(channel.port2 as unknown as Parameters<typeof wrap>[0]);
  };

  it('an OutboxError arrives with its code and details', async () => {
    const remote = connect({
      fail(): void {
        throw new OutboxError('invalid_intent', 'bad input', {
          issues: [{ path: 'collection', message: 'Required' }],
        });
      },
    });
    const error = await remote.fail().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutboxError);
    expect(error).toMatchObject({
      code: 'invalid_intent',
      message: 'bad input',
      details: { issues: [{ path: 'collection' }] },
    });
  });

  it('other errors and thrown values arrive as they did before', async () => {
    const remote = connect({
      crash(): void {
        throw new RangeError('out of range');
      },
      raw(): void {
        throw { not: 'an error' };
      },
    });
    await expect(remote.crash()).rejects.toMatchObject({
      name: 'RangeError',
      message: 'out of range',
    });
    await expect(remote.raw()).rejects.toEqual({ not: 'an error' });
  });

  it('installing twice is harmless', () => {
    installComlinkErrors();
    installComlinkErrors();
  });
});
