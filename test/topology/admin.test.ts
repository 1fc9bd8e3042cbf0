import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callApi, connectVia, type Connected } from '../support/client.ts';
import { freePort } from '../support/ports.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { until } from '../support/wait.ts';
import {
  redisCluster,
  redisSentinel,
  useWorld,
  type RedisTopology,
  type World,
} from '../support/world.ts';
import { PUBLIC_URL } from './topology.ts';

/**
 * The admin API's main operations on Sentinel and on Cluster: the overview with each master's
 * health, connections found by licence, a disconnection, a session ended; then what walks every
 * master or every shard: the census, the re-encryption under a new active key, dead letters
 * listed, redelivered and discarded. One broker process per topology, with ADMIN_PORT, on a real
 * Redis of that kind; events go to a receiver that refuses the sessions' events until told, so that
 * an outbox of two (EVENTS_OUTBOX_MAX=2) sets some aside as dead letters. (Of two, not one: a
 * redelivered event waits in the admin outbox, where the redelivery's own admin.action event
 * follows it; an outbox of one would set it aside again at once.)
 */
const OPERATOR = `batadm_${randomBytes(32).toString('base64url')}`;

type View = { id: string; sessionRef: string; licence: string; status: string };
type Overview = {
  redis: { topology: string; masters: { address: string; up: boolean }[] };
  sessions: number | null;
  connections: {
    byStatus: { connected: number; disconnected: number };
    byKeyId: Record<string, number> | null;
  };
  census: { takenAt: string | null; state: string };
};
type Job = { state: string; finishedAt: string | null } & Record<string, unknown>;
/** Sessions made by the census's test, each with three licences: on Cluster, over every master. */
const SPREAD = 6;

function adminOperations<R>(
  name: string,
  topology: RedisTopology<R>,
  expected: { topology: string; masters: number },
): void {
  describe(`the admin API on ${name}`, () => {
    const world: World<R> = useWorld({
      brokers: { processes: 0 },
      redis: topology,
      publicUrl: PUBLIC_URL,
    });
    let adminUrl = '';
    let folder = '';
    const sessions: Connected[] = [];

    let receiver: Receiver | undefined;
    /** Whether the receiver takes the sessions' events (admin.action events always). */
    let accepting = false;
    /** Each event the receiver took or refused: its type, its id (webhook-id) and its body. */
    const received: { type: string; id: string; body: string }[] = [];

    const admin = async (
      path: string,
      method = 'GET',
      body?: unknown,
      status = 200,
    ): Promise<unknown> => {
      const response = await fetch(`${adminUrl}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${OPERATOR}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      expect(response.status, `${method} ${path}`).toBe(status);
      return response.json();
    };
    /** Starts job `name` (202), and answers it once it is no longer running. */
    const runJob = async (name: string): Promise<Job> => {
      const started = (await admin(`/api/v1/jobs/${name}`, 'POST', undefined, 202)) as Job;
      expect(started.state).toBe('running');
      let job = started;
      await until(
        async () => {
          job = (await admin(`/api/v1/jobs/${name}`)) as Job;
          return job.state !== 'running';
        },
        { what: `the ${name} job to end`, deadlineMs: 30_000, intervalMs: 100 },
      );
      return job;
    };
    const find = async (query: string) =>
      ((await admin(`/api/v1/connections?${query}`)) as { connections: View[] }).connections;

    beforeAll(async () => {
      folder = await mkdtemp(join(tmpdir(), 'baton-admin-topology-'));
      const tokensFile = join(folder, 'tokens.json');
      const sha256 = createHash('sha256').update(OPERATOR).digest('hex');
      await writeFile(tokensFile, JSON.stringify([{ name: 'olivia', role: 'operator', sha256 }]));
      receiver = await startReceiver((req, body, res) => {
        const type = (JSON.parse(body) as { type: string }).type;
        received.push({ type, id: String(req.headers['webhook-id']), body });
        res.statusCode = type === 'admin.action' || accepting ? 204 : 503;
        res.end();
      });
      const port = await freePort();
      await world.startProcess({
        ADMIN_PORT: String(port),
        ADMIN_TOKENS_FILE: tokensFile,
        EVENTS_WEBHOOK_URL: receiver.origin,
        EVENTS_WEBHOOK_SECRET: `whsec_${randomBytes(32).toString('base64')}`,
        EVENTS_OUTBOX_MAX: '2',
      });
      adminUrl = `http://127.0.0.1:${port}`;
      const client = world.client();
      for (const licenseId of ['lic-1001', 'lic-1002', 'lic-1001']) {
        world.control.setConsent({ mode: 'approve', licenseId });
        sessions.push(await connectVia(client, { start: 0, callback: 0, redeem: 0 }));
      }
    });
    afterAll(async () => {
      await receiver?.close();
      if (folder) await rm(folder, { recursive: true, force: true });
    });

    it('answers the overview with each master up', async () => {
      const overview = (await admin('/api/v1/overview')) as Overview;
      expect(overview.redis.topology).toBe(expected.topology);
      expect(overview.redis.masters).toHaveLength(expected.masters);
      for (const master of overview.redis.masters) {
        expect(master.up, master.address).toBe(true);
        expect(master.address).toMatch(/^[^@/]+:\d+$/);
      }
      expect(overview.connections.byStatus).toEqual({ connected: 3, disconnected: 0 });
    });

    it('finds the connections of a licence, in every session that holds it', async () => {
      const [first] = await find(`connection=${sessions[0]!.id}`);
      const byLicence = await find(`licence=${encodeURIComponent(first!.licence)}`);
      expect(byLicence.map((view) => view.id).sort()).toEqual(
        [sessions[0]!.id, sessions[2]!.id].sort(),
      );
    });

    it('disconnects a connection and ends a session', async () => {
      const [session, other] = sessions;
      expect(await admin(`/api/v1/connections/${session!.id}/disconnect`, 'POST')).toEqual({
        ok: true,
        count: 1,
      });
      expect((await find(`connection=${session!.id}`))[0]?.status).toBe('disconnected');

      const [view] = await find(`connection=${other!.id}`);
      expect(await admin(`/api/v1/sessions/${view!.sessionRef}/end`, 'POST')).toEqual({
        ok: true,
        count: 1,
      });
      expect(await find(`session=${view!.sessionRef}`)).toEqual([]);
      expect((await callApi(world.client(), 0, other!)).status).toBe(401);
      const overview = (await admin('/api/v1/overview')) as Overview;
      expect(overview.connections.byStatus).toEqual({ connected: 1, disconnected: 1 });
    });

    // Left by the tests above: two sessions (one connection each, one disconnected).
    const LEFT = { sessions: 2, connected: 1, disconnected: 1 };
    const LICENCES = ['lic-1001', 'lic-1002', 'lic-2001'];
    const RECORDS = LEFT.connected + LEFT.disconnected + LICENCES.length * SPREAD;

    it('counts every session and connection record, on every master (the census)', async () => {
      const client = world.client();
      for (let i = 0; i < SPREAD; i++) {
        let sessionToken: string | undefined;
        for (const licenseId of LICENCES) {
          world.control.setConsent({ mode: 'approve', licenseId });
          const made = await connectVia(client, {
            start: 0,
            callback: 0,
            redeem: 0,
            ...(sessionToken === undefined ? {} : { sessionToken }),
          });
          sessionToken ??= made.token;
        }
      }
      const before = (await admin('/api/v1/overview')) as Overview;
      expect(before.sessions).toBeNull();
      expect(before.census).toEqual({ takenAt: null, state: 'idle' });

      const job = await runJob('census');
      expect(job).toMatchObject({
        state: 'done',
        startedBy: 'olivia',
        sessions: LEFT.sessions + SPREAD,
        connections: RECORDS,
        byKeyId: { k: RECORDS },
        byStatus: { connected: RECORDS - LEFT.disconnected, disconnected: LEFT.disconnected },
        unreadable: 0,
        error: null,
      });
      const overview = (await admin('/api/v1/overview')) as Overview;
      expect(overview.sessions).toBe(LEFT.sessions + SPREAD);
      expect(overview.connections.byKeyId).toEqual({ k: RECORDS });
      expect(overview.census).toEqual({ takenAt: job.finishedAt, state: 'done' });
    });

    it('seals every record again under a new active key, on every master', async () => {
      const old = world.env.TOKEN_ENCRYPTION_KEYS;
      await world.reconfigure({
        TOKEN_ENCRYPTION_KEYS: `k2:${randomBytes(32).toString('base64')},${old}`,
      });
      const job = await runJob('reencrypt');
      expect(job).toMatchObject({
        state: 'done',
        activeKeyId: 'k2',
        seen: RECORDS,
        missingKey: {},
        error: null,
      });
      // A record read meanwhile (a call) is sealed again by its read: current when the job comes.
      expect(Number(job.resealed) + Number(job.alreadyCurrent)).toBe(RECORDS);
      const census = await runJob('census');
      expect(census).toMatchObject({ byKeyId: { k2: RECORDS }, unreadable: 0 });
    });

    it('lists dead letters from every shard, redelivers one and discards another', async () => {
      type Letter = { id: string; type: string; reason: string };
      let letters: Letter[] = [];
      // Each session of three set its first event aside (its outbox holds two).
      await until(
        async () => {
          const listed = await admin('/api/v1/dead-letters?reason=outbox_full&limit=50');
          letters = (listed as { deadLetters: Letter[] }).deadLetters;
          return letters.length >= SPREAD;
        },
        { what: 'a dead letter from each session of three', deadlineMs: 15_000, intervalMs: 100 },
      );
      const [first, second] = letters;
      expect(await admin(`/api/v1/dead-letters/${second!.id}`, 'DELETE')).toEqual({
        ok: true,
        count: 1,
      });
      await admin(`/api/v1/dead-letters/${second!.id}`, 'DELETE', undefined, 404);
      // The discard's event delivered: the admin outbox has room for the redelivered one.
      await until(() => received.some(({ body }) => body.includes(`"event":"${second!.id}"`)), {
        what: "the discard's admin.action event",
        deadlineMs: 15_000,
      });
      accepting = true;
      // Its first delivery was refused (that is how it died): only what comes now counts.
      const from = received.length;
      expect(await admin(`/api/v1/dead-letters/${first!.id}/redeliver`, 'POST')).toEqual({
        ok: true,
        count: 1,
      });
      // Sent again under its own id, and taken this time.
      const again = () => received.slice(from);
      await until(() => again().some(({ id, type }) => id === first!.id && type === first!.type), {
        what: 'the redelivered event',
        deadlineMs: 15_000,
      });
      const after = (await admin('/api/v1/dead-letters?reason=outbox_full&limit=50')) as {
        deadLetters: Letter[];
      };
      const ids = after.deadLetters.map((letter) => letter.id);
      expect(ids).not.toContain(first!.id);
      expect(ids).not.toContain(second!.id);
    });
  });
}

adminOperations('Sentinel', redisSentinel(), { topology: 'sentinel', masters: 1 });
adminOperations('Cluster', redisCluster({ masters: 3 }), { topology: 'cluster', masters: 3 });
