import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callApi, Client, connectVia } from '../support/client.ts';
import { BrokerProcess } from '../support/process.ts';
import { useBrokerWorld } from '../support/broker-world.ts';
import { until } from '../support/wait.ts';

/** Connection events, POSTed by a broker process to a receiver of the test's own. */
const PUBLIC_URL = 'http://baton.events.test';
const LICENSE = 'lic-2001';
const SECRET = randomBytes(32).toString('hex');

interface Received {
  headers: Record<string, string | string[] | undefined>;
  body: string;
  answered: number;
}

/** Answers each POST with the next status of `script` (then 204), keeping what it got. */
class Receiver {
  readonly received: Received[] = [];
  script: number[] = [];
  readonly #server: Server;
  constructor() {
    this.#server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        const answered = this.script.shift() ?? 204;
        this.received.push({ headers: req.headers, body, answered });
        res.writeHead(answered).end();
      });
    });
  }
  async start(): Promise<string> {
    this.#server.listen(0, '127.0.0.1');
    await once(this.#server, 'listening');
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/hooks/baton`;
  }
  delivered(type: string): Received[] {
    return this.received.filter(
      (each) => each.answered < 300 && (JSON.parse(each.body) as { type: string }).type === type,
    );
  }
  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}

/** What a receiver does: recompute the HMAC over `timestamp.body` and compare in constant time. */
function verified(event: Received): boolean {
  const timestamp = String(event.headers['x-baton-timestamp']);
  const given = Buffer.from(String(event.headers['x-baton-signature']));
  const expected = Buffer.from(
    `v1=${createHmac('sha256', SECRET).update(`${timestamp}.${event.body}`).digest('hex')}`,
  );
  return given.length === expected.length && timingSafeEqual(given, expected);
}

const world = useBrokerWorld(PUBLIC_URL);
let receiver: Receiver;
let receiverUrl: string;

beforeAll(async () => {
  receiver = new Receiver();
  receiverUrl = await receiver.start();
});

afterAll(async () => {
  await receiver?.close();
});

describe('EVENTS_WEBHOOK_URL', () => {
  it('posts signed disconnected and reconnected events, tries again after a 503, and holds no secret', async () => {
    await using broker = await BrokerProcess.start(
      world.env({ EVENTS_WEBHOOK_URL: receiverUrl, EVENTS_WEBHOOK_SECRET: SECRET }),
    );
    const client = new Client({ publicUrl: PUBLIC_URL, instances: [broker.url] });
    const control = world.sandbox.sandbox.control;
    control.setConsent({ mode: 'approve', licenseId: LICENSE });
    const session = await connectVia(client, { start: 0, callback: 0, redeem: 0 });

    // The provider revokes the grant: the refresh is rejected, and the answer does not wait.
    receiver.script = [503];
    control.revokeGrant(LICENSE);
    control.expireAccessTokens(LICENSE);
    expect((await callApi(client, 0, session)).status).toBe(401);
    await until(() => receiver.delivered('connection.disconnected').length === 1, {
      what: 'the disconnected event, after one retry',
    });
    expect(receiver.received.map((each) => each.answered)).toEqual([503, 204]);
    const [refused, disconnected] = receiver.received;
    expect(JSON.parse(refused!.body).id).toBe(JSON.parse(disconnected!.body).id);
    expect(verified(disconnected!)).toBe(true);
    expect(JSON.parse(disconnected!.body)).toMatchObject({
      type: 'connection.disconnected',
      connection: { id: session.id, api_origin: world.sandbox.url, reason: 'refresh_rejected' },
    });

    // The user authorizes the license again, in the same session.
    control.setConsent({ mode: 'approve', licenseId: LICENSE });
    const again = await connectVia(client, {
      start: 0,
      callback: 0,
      redeem: 0,
      sessionToken: session.token,
    });
    expect(again.id).toBe(session.id);
    await until(() => receiver.delivered('connection.reconnected').length === 1, {
      what: 'the reconnected event',
    });
    const [reconnected] = receiver.delivered('connection.reconnected');
    expect(verified(reconnected!)).toBe(true);
    expect(JSON.parse(reconnected!.body).connection).toEqual({
      id: session.id,
      api_origin: world.sandbox.url,
    });

    // A signature over another body does not verify.
    expect(verified({ ...reconnected!, body: reconnected!.body.replace('reconnected', 'x') })).toBe(
      false,
    );
    const everything = receiver.received.map((each) => JSON.stringify(each)).join('\n');
    const secrets = [...control.secrets(), session.token, again.token, SECRET];
    expect(secrets.length).toBeGreaterThan(3);
    for (const secret of secrets) expect(everything).not.toContain(secret);
    await client.close();
  });
});
