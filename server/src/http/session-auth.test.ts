import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import type { Sessions } from '../connections/sessions.ts';
import { createSessionGate } from './session-auth.ts';

describe('the session gate', () => {
  const gate = (failuresPerMinute = 2) => {
    let now = 0;
    const lookups: string[] = [];
    const sessions = {
      resolve: (token: string) => Promise.resolve(token === 'good' ? 'sid-1' : null),
    } as unknown as Sessions;
    const requireSid = createSessionGate({
      sessions,
      now: () => now,
      addressOf: (req) => {
        const address = req.headers['x-test-address'] as string;
        lookups.push(address);
        return address;
      },
      failuresPerMinute,
      callsPerMinute: 0,
    });
    const call = (token: string, address = '192.0.2.1') =>
      requireSid({
        headers: { authorization: `Bearer ${token}`, 'x-test-address': address },
      } as unknown as IncomingMessage);
    return { call, lookups, advance: (ms: number) => (now += ms) };
  };

  it('gives the session of a known token, 401 for any other', async () => {
    const { call } = gate();
    await expect(call('good')).resolves.toBe('sid-1');
    await expect(call('bad')).rejects.toMatchObject({ code: 'invalid_session', status: 401 });
  });

  it('answers 429 to an address whose checks keep failing, before its token is looked up', async () => {
    const { call } = gate(2);
    await expect(call('bad')).rejects.toMatchObject({ status: 401 });
    await expect(call('bad')).rejects.toMatchObject({ status: 401 });
    await expect(call('good')).rejects.toMatchObject({ code: 'rate_limited', retryAfter: 30 });
    await expect(call('good', '192.0.2.2')).resolves.toBe('sid-1');
  });

  it('stops working out addresses a minute after the last failure, though it never came back', async () => {
    const { call, lookups, advance } = gate();
    await expect(call('bad', '192.0.2.9')).rejects.toMatchObject({ status: 401 });
    await call('good');
    expect(lookups).toEqual(['192.0.2.9', '192.0.2.1']);
    advance(60_000);
    await call('good');
    await call('good');
    expect(lookups).toEqual(['192.0.2.9', '192.0.2.1', '192.0.2.1']);
  });
});
