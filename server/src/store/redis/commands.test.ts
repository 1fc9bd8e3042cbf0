import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Redis } from './clients.ts';
import { createCommands } from './commands.ts';

/**
 * One connection to a master whose replica is down, as Redis runs it: one command at a time, in
 * the order sent, each WAIT holding the connection for its whole timeout and answering 0 (or never,
 * when `waitAnswers` is false; or `acknowledged`, a replica that lags that long). `events` records,
 * in order, each command run and each WAIT sent and answered.
 */
function masterWithoutReplica(waitAnswers = true, acknowledged = 0) {
  const events: string[] = [];
  let waitsSent = 0;
  let onWire = 0;
  let mostOnWire = 0;
  let queue: Promise<unknown> = Promise.resolve();
  const sendCommand = (_key: string | undefined, args: string[]): Promise<unknown> => {
    const wait = args[0] === 'WAIT' ? ++waitsSent : 0;
    if (wait) {
      events.push(`WAIT ${wait} sent`);
      mostOnWire = Math.max(mostOnWire, ++onWire);
    }
    const answer = queue.then(async () => {
      if (!wait) {
        events.push(args.join(' '));
        return 'OK';
      }
      if (!waitAnswers) return new Promise(() => {});
      await new Promise((resolve) => setTimeout(resolve, Number(args[2])));
      onWire--;
      events.push(`WAIT ${wait} answered`);
      return acknowledged;
    });
    queue = answer.catch(() => {});
    return answer;
  };
  const redis = { mode: 'sentinel', nodeOf: () => '', sendCommand } as unknown as Redis;
  return { redis, events, waits: () => waitsSent, mostOnWire: () => mostOnWire };
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('replicated (WAIT after a write), with the replica down', () => {
  const options = { waitReplicas: 1, waitTimeoutMs: 250, now: () => Date.now() };

  it('writes share their WAITs, one on the wire at a time: six at once all return within the command bound', async () => {
    const master = masterWithoutReplica();
    const unreplicated = vi.fn();
    const commands = createCommands(master.redis, { ...options, onUnreplicated: unreplicated });
    const started = Date.now();
    const writes = Array.from({ length: 6 }, async (_, i) => {
      await commands.send(`k${i}`, ['SET', `k${i}`, 'v']);
      await commands.replicated(`k${i}`);
      return Date.now() - started;
    });
    // One WAIT per write would hold the connection 6 × 250 ms: the last ones past the 1 s bound.
    await vi.advanceTimersByTimeAsync(2000);
    const settled = await Promise.allSettled(writes);
    expect(settled.map((write) => write.status)).toEqual(Array(6).fill('fulfilled'));
    for (const write of settled)
      if (write.status === 'fulfilled') expect(write.value).toBeLessThanOrEqual(500);
    expect(master.mostOnWire()).toBe(1);
    expect(master.waits()).toBeLessThanOrEqual(2);
    expect(unreplicated.mock.calls).toEqual(Array.from({ length: 6 }, () => [0]));
  });

  it('a write answered while a WAIT is on the wire waits for one sent after it', async () => {
    // A replica that lags: each WAIT takes its whole timeout, and acknowledges.
    const master = masterWithoutReplica(true, 1);
    const commands = createCommands(master.redis, options);
    const first = commands.send('a', ['SET', 'a', 'v']).then(() => commands.replicated('a'));
    await vi.advanceTimersByTimeAsync(10);
    expect(master.events).toEqual(['SET a v', 'WAIT 1 sent']);
    // Sent while WAIT 1 holds the connection: it runs after WAIT 1, which does not cover it.
    const second = commands.send('b', ['SET', 'b', 'v']).then(() => {
      master.events.push('b written');
      return commands.replicated('b');
    });
    let secondDone = false;
    void second.then(() => (secondDone = true));
    await vi.advanceTimersByTimeAsync(250);
    await first;
    expect(secondDone).toBe(false);
    await vi.advanceTimersByTimeAsync(250);
    await second;
    expect(master.events).toEqual([
      'SET a v',
      'WAIT 1 sent',
      'WAIT 1 answered',
      'SET b v',
      'b written',
      'WAIT 2 sent',
      'WAIT 2 answered',
    ]);
  });

  it('once a WAIT came back short, the writes of the next second skip theirs: reported, and nothing held behind them', async () => {
    const master = masterWithoutReplica();
    const unreplicated = vi.fn();
    const commands = createCommands(master.redis, { ...options, onUnreplicated: unreplicated });
    const write = async (key: string) => {
      await commands.send(key, ['SET', key, 'v']);
      await commands.replicated(key);
    };
    const first = write('a');
    await vi.advanceTimersByTimeAsync(250);
    await first;
    // A failover's new master without its replica: one WAIT each would hold the connection, and
    // every read behind it, 250 ms per write.
    for (let n = 0; n < 5; n++) {
      const next = write(`b${n}`);
      await vi.advanceTimersByTimeAsync(100);
      await next;
    }
    expect(master.waits()).toBe(1);
    expect(unreplicated).toHaveBeenCalledTimes(6);
    expect(unreplicated).toHaveBeenLastCalledWith(0);
    // The second is out: the next write's WAIT looks again.
    await vi.advanceTimersByTimeAsync(1000);
    const later = write('c');
    await vi.advanceTimersByTimeAsync(250);
    await later;
    expect(master.waits()).toBe(2);
  });

  it('a WAIT that goes unanswered does not fail the write: it is reported unreplicated', async () => {
    const master = masterWithoutReplica(false);
    const unreplicated = vi.fn();
    const onError = vi.fn();
    const commands = createCommands(master.redis, {
      ...options,
      onError,
      onUnreplicated: unreplicated,
    });
    await commands.send('k', ['SET', 'k', 'v']);
    const replicated = commands.replicated('k').then(
      () => 'returned',
      (error: unknown) => error,
    );
    await vi.advanceTimersByTimeAsync(1000);
    expect(await replicated).toBe('returned');
    expect(unreplicated).toHaveBeenCalledWith(0);
    expect(onError).toHaveBeenCalledTimes(1);
  });
});

describe('replicated, with the replica acknowledging', () => {
  it('waits for every write', async () => {
    let waits = 0;
    const sendCommand = async (_key: string | undefined, args: string[]) =>
      args[0] === 'WAIT' ? ++waits && 1 : 'OK';
    const redis = { mode: 'sentinel', nodeOf: () => '', sendCommand } as unknown as Redis;
    const unreplicated = vi.fn();
    const commands = createCommands(redis, {
      waitReplicas: 1,
      now: () => Date.now(),
      onUnreplicated: unreplicated,
    });
    for (const key of ['a', 'b', 'c']) {
      await commands.send(key, ['SET', key, 'v']);
      await commands.replicated(key);
    }
    expect(waits).toBe(3);
    expect(unreplicated).not.toHaveBeenCalled();
  });
});
