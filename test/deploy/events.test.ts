import { routes } from '@baton/shared';
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callApi, Client, connectVia } from '../support/client.ts';
import { BrokerProcess } from '../support/process.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { useWorld } from '../support/world.ts';
import { until } from '../support/wait.ts';

/**
 * Events, POSTed by broker processes to a receiver of the test's own that does what docs/events.md
 * tells a receiver to do: verify with a Standard Webhooks library (`standardwebhooks`, written by
 * no one here), and process each `webhook-id` once.
 */
const PUBLIC_URL = 'http://baton.events.test';
const LICENSE = 'lic-2001';
const SECRET = `whsec_${randomBytes(32).toString('base64')}`;

interface Processed {
  id: string;
  type: string;
  data: {
    session: { ref: string; reason?: string };
    connection?: { id: string };
    connections?: string[];
  };
}

/**
 * What a receiver keeps, for the whole file as a real receiver would: every request as it came,
 * and each id once, in the order verified. A test reads what came after its own mark: an event of
 * an earlier test may come again (delivery is at least once) and is then not processed again.
 */
class Received {
  readonly requests: { headers: Record<string, string>; body: string }[] = [];
  readonly processed: Processed[] = [];
  #from = 0;
  /** Answers to come, one per request of this test (then 204); 'hold': never answer it. */
  script: (number | 'hold')[] = [];
  readonly held: ServerResponse[] = [];
  readonly #webhook = new Webhook(SECRET);

  handle(req: IncomingMessage, body: string, res: ServerResponse): void {
    const headers = req.headers as Record<string, string>;
    this.requests.push({ headers, body });
    const id = headers['webhook-id']!;
    // An earlier test's event, come again: acknowledged, and the script left to this test's own.
    const next = (this.earlier(id) ? undefined : this.script.shift()) ?? 204;
    if (next === 'hold') {
      this.held.push(res);
      return;
    }
    if (next < 300) {
      const payload = this.#webhook.verify(body, headers) as Omit<Processed, 'id'>;
      if (!this.processed.some((each) => each.id === id))
        this.processed.push({ id, type: payload.type, data: payload.data });
    }
    res.writeHead(next).end();
  }

  /** From here on, `mine` and `types` see only what is processed after this call. */
  mark(): void {
    this.#from = this.processed.length;
  }

  /** Whether `id` was processed before the mark: an earlier test's event. */
  earlier(id: string): boolean {
    return this.processed.slice(0, this.#from).some((each) => each.id === id);
  }

  mine(): Processed[] {
    return this.processed.slice(this.#from);
  }

  types(): string[] {
    return this.mine().map((each) => each.type);
  }
}

const world = useWorld({ brokers: { processes: 0 }, publicUrl: PUBLIC_URL });
const receiver = new Received();
let server: Receiver;
let receiverUrl: string;

beforeAll(async () => {
  server = await startReceiver((req, body, res) => receiver.handle(req, body, res));
  receiverUrl = `${server.origin}/hooks/baton`;
});

afterAll(async () => {
  await server?.close();
});

describe('EVENTS_WEBHOOK_URL', () => {
  it('reports a connection’s whole life, signed by Standard Webhooks, in order, holding no secret', async () => {
    receiver.mark();
    await using broker = await BrokerProcess.start(
      world.freshEnv({ EVENTS_WEBHOOK_URL: receiverUrl, EVENTS_WEBHOOK_SECRET: SECRET }),
    );
    const client = new Client({ publicUrl: PUBLIC_URL, instances: [broker.url] });
    const control = world.sandbox.sandbox.control;
    control.setConsent({ mode: 'approve', licenseId: LICENSE });
    const session = await connectVia(client, { start: 0, callback: 0, redeem: 0 });

    // The provider revokes the grant: the refresh is rejected. The receiver fails once.
    receiver.script = [503];
    control.revokeGrant(LICENSE);
    control.expireAccessTokens(LICENSE);
    expect((await callApi(client, 0, session)).status).toBe(401);
    // Authorized again, in the same session; then removed; then the user signs out.
    control.setConsent({ mode: 'approve', licenseId: LICENSE });
    await connectVia(client, { start: 0, callback: 0, redeem: 0, sessionToken: session.token });
    const bearer = { authorization: `Bearer ${session.token}` };
    expect(
      (await client.fetch(routes.connection(session.id), { method: 'DELETE', headers: bearer }))
        .status,
    ).toBe(204);
    expect((await client.fetch(routes.session, { method: 'DELETE', headers: bearer })).status).toBe(
      204,
    );

    await until(() => receiver.mine().length === 5, { what: 'five events' });
    expect(receiver.types()).toEqual([
      'connection.created',
      'connection.disconnected',
      'connection.reconnected',
      'connection.removed',
      'session.ended',
    ]);
    const [created, disconnected, , , ended] = receiver.mine();
    expect(created!.data).toMatchObject({
      connection: { id: session.id, api_origin: world.sandbox.url },
    });
    expect(disconnected!.data).toMatchObject({
      connection: { id: session.id, reason: 'refresh_rejected' },
    });
    expect(ended!.data).toMatchObject({ session: { reason: 'signed_out' }, connections: [] });
    expect(new Set(receiver.mine().map((each) => each.data.session.ref)).size).toBe(1);

    const everything = receiver.requests.map((each) => JSON.stringify(each)).join('\n');
    const secrets = [...control.secrets(), session.token, SECRET.slice(6)];
    expect(secrets.length).toBeGreaterThan(3);
    for (const secret of secrets) expect(everything).not.toContain(secret);
    await client.close();
    // Stopped as an operator would: the pass under way pops what the receiver answered.
    expect(await broker.stop()).toBe(0);
  });

  it('three instances, the delivering one killed with SIGKILL mid-delivery: every event arrives, once per id, in order', async () => {
    receiver.mark();
    const env = world.freshEnv({ EVENTS_WEBHOOK_URL: receiverUrl, EVENTS_WEBHOOK_SECRET: SECRET });
    const first = await BrokerProcess.start(env);
    const client = new Client({ publicUrl: PUBLIC_URL, instances: [first.url] });
    const control = world.sandbox.sandbox.control;
    control.setConsent({ mode: 'approve', licenseId: LICENSE });

    // The receiver takes the first delivery and never answers: the instance is killed then.
    const before = receiver.requests.length;
    receiver.script = ['hold'];
    const session = await connectVia(client, { start: 0, callback: 0, redeem: 0 });
    await until(() => receiver.held.length === 1, { what: 'the delivery in flight' });
    const inFlight = receiver.requests[before]!.headers['webhook-id'];
    await first.stop('SIGKILL');

    await using second = await BrokerProcess.start(env);
    await using third = await BrokerProcess.start(env);
    const others = new Client({ publicUrl: PUBLIC_URL, instances: [second.url, third.url] });
    // More changes meanwhile, on the other instances: they queue behind the first event.
    control.revokeGrant(LICENSE);
    control.expireAccessTokens(LICENSE);
    expect((await callApi(others, 0, session)).status).toBe(401);
    const bearer = { authorization: `Bearer ${session.token}` };
    expect(
      (await others.fetch(routes.session, { via: 1, method: 'DELETE', headers: bearer })).status,
    ).toBe(204);

    // The killed instance's hold on the outbox runs out (30 s); another delivers all of it.
    await until(() => receiver.mine().length === 3, {
      what: 'the three events, after the lease of the killed instance ran out',
      deadlineMs: 60_000,
    });
    expect(receiver.types()).toEqual([
      'connection.created',
      'connection.disconnected',
      'session.ended',
    ]);
    expect(receiver.mine()[0]!.id).toBe(inFlight);
    const ids = receiver.requests
      .slice(before)
      .map((each) => each.headers['webhook-id'])
      .filter((id) => !receiver.earlier(id!));
    // Sent twice at most: the cut-off attempt, then the one answered.
    expect(ids.filter((id) => id === inFlight)).toHaveLength(2);
    expect(new Set(ids).size).toBe(3);
    for (const res of receiver.held.splice(0)) res.destroy();
    await client.close();
    await others.close();
  }, 120_000);

  it('one event per change: 50 concurrent removals of a connection and 200 concurrent sign-outs over two instances record one each', async () => {
    receiver.mark();
    const env = world.freshEnv({ EVENTS_WEBHOOK_URL: receiverUrl, EVENTS_WEBHOOK_SECRET: SECRET });
    await using first = await BrokerProcess.start(env);
    await using second = await BrokerProcess.start(env);
    const client = new Client(
      { publicUrl: PUBLIC_URL, instances: [first.url, second.url] },
      { connections: 32 },
    );
    const control = world.sandbox.sandbox.control;
    control.setConsent({ mode: 'approve', licenseId: LICENSE });
    const session = await connectVia(client, { start: 0, callback: 0, redeem: 0 });
    control.setConsent({ mode: 'approve', licenseId: 'lic-1001' });
    const other = await connectVia(client, {
      start: 0,
      callback: 0,
      redeem: 0,
      sessionToken: session.token,
    });
    const bearer = { authorization: `Bearer ${session.token}` };
    const all = (count: number, path: string) =>
      Promise.all(
        Array.from({ length: count }, async (_, index) => {
          const response = await client.fetch(path, {
            via: index % 2,
            method: 'DELETE',
            headers: bearer,
          });
          await response.arrayBuffer();
          return response.status;
        }),
      );

    const removals = await all(50, routes.connection(session.id));
    expect(removals).toContain(204);
    const signOuts = await all(200, routes.session);
    expect(signOuts).toContain(204);
    await until(() => receiver.types().includes('session.ended'), { what: 'the sign-out' });
    // Anything recorded twice would be delivered right behind it, from the same outbox.
    await Promise.all([first.stop(), second.stop()]);
    expect(receiver.types()).toEqual([
      'connection.created',
      'connection.created',
      'connection.removed',
      'session.ended',
    ]);
    expect(receiver.mine()[3]!.data.connections).toEqual([other.id]);
    await client.close();
  }, 120_000);
});
