import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createWebhook, signEvent, SIGNATURE_HEADER, TIMESTAMP_HEADER } from './events.ts';

const log = pino({ level: 'silent' });
const SECRET = 'webhook-secret-for-unit-tests-0123456789';
const event = {
  type: 'connection.disconnected',
  connection: { id: 'c1', api_origin: 'https://api.example', reason: 'refresh_rejected' },
} as const;

function harness(answers: (number | Error)[]) {
  const calls: { headers: Record<string, string>; body: string }[] = [];
  const sleeps: number[] = [];
  const webhook = createWebhook({
    url: 'https://receiver.example/hook',
    secret: SECRET,
    now: () => 1_700_000_000_000,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    log,
    attempts: 4,
    backoffMs: 100,
    fetch: async (_url, init) => {
      calls.push({ headers: init?.headers as Record<string, string>, body: String(init?.body) });
      const answer = answers.shift() ?? 200;
      if (answer instanceof Error) throw answer;
      return new Response(null, { status: answer });
    },
  });
  return { webhook, calls, sleeps };
}

describe('createWebhook', () => {
  it('posts the event signed over timestamp.body', async () => {
    const { webhook, calls } = harness([200]);
    webhook.emit(event);
    await webhook.idle();
    expect(calls).toHaveLength(1);
    const [call] = calls;
    const timestamp = call!.headers[TIMESTAMP_HEADER]!;
    expect(timestamp).toBe('1700000000');
    expect(call!.headers[SIGNATURE_HEADER]).toBe(signEvent(SECRET, timestamp, call!.body));
    expect(JSON.parse(call!.body)).toMatchObject({
      type: 'connection.disconnected',
      occurred_at: '2023-11-14T22:13:20.000Z',
      connection: event.connection,
    });
  });

  it('tries again with exponential back-off on 5xx, 429 and network errors', async () => {
    const { webhook, calls, sleeps } = harness([503, 429, new TypeError('fetch failed'), 204]);
    webhook.emit(event);
    await webhook.idle();
    expect(calls).toHaveLength(4);
    expect(sleeps).toEqual([100, 200, 400]);
    expect(new Set(calls.map((call) => JSON.parse(call.body).id)).size).toBe(1);
  });

  it('gives up after the last attempt', async () => {
    const { webhook, calls, sleeps } = harness([500, 500, 500, 500, 500]);
    webhook.emit(event);
    await webhook.idle();
    expect(calls).toHaveLength(4);
    expect(sleeps).toEqual([100, 200, 400]);
  });

  it('does not try again when the receiver refuses (4xx)', async () => {
    const { webhook, calls } = harness([400]);
    webhook.emit(event);
    await webhook.idle();
    expect(calls).toHaveLength(1);
  });

  it('never blocks the caller: emit returns while the receiver has not answered', async () => {
    let answer!: (response: Response) => void;
    const webhook = createWebhook({
      url: 'https://receiver.example/hook',
      secret: SECRET,
      now: Date.now,
      sleep: async () => {},
      log,
      fetch: () => new Promise<Response>((resolve) => (answer = resolve)),
    });
    let idle = false;
    expect(webhook.emit(event)).toBeUndefined();
    const drained = webhook.idle().then(() => (idle = true));
    await Promise.resolve();
    expect(idle).toBe(false);
    answer(new Response(null, { status: 200 }));
    await drained;
    expect(idle).toBe(true);
  });
});
