import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callApi, Client, connectVia, type Connected } from '../support/client.ts';
import { freePort } from '../support/ports.ts';
import { BrokerProcess } from '../support/process.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { logWritten, until } from '../support/wait.ts';
import { CLIENT_SECRET, useWorld } from '../support/world.ts';

/**
 * The admin API end to end: a broker process (main.ts, as deployed) with ADMIN_PORT on a real
 * Redis, real sign-ins through the sandbox, then every operation an operator has, each answer and
 * log line scanned for what must never show. Events go to a receiver that refuses the sessions'
 * events at first, so that an outbox of one (EVENTS_OUTBOX_MAX=1) sets some aside as dead letters.
 */
const PUBLIC_URL = 'http://baton.admin.test';
const world = useWorld({ brokers: { processes: 0 }, publicUrl: PUBLIC_URL });

const token = () => `batadm_${randomBytes(32).toString('base64url')}`;
const OPERATOR = token();
const VIEWER = token();
const entry = (name: string, role: string, value: string) => ({
  name,
  role,
  sha256: createHash('sha256').update(value).digest('hex'),
});
const OLIVIA = { name: 'olivia', role: 'operator' };

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

let broker: BrokerProcess;
let adminUrl: string;
let receiver: Receiver;
let folder: string;
/** Whether the receiver takes the sessions' events (admin.action events always). */
let acceptingSessionEvents = false;
const received: { type: string; body: string }[] = [];
/** Every answer of the admin API, for the leak scan. */
const answers: Answer[] = [];
const sessions: Connected[] = [];

async function admin(
  path: string,
  init: { method?: string; as?: string | null; body?: unknown } = {},
): Promise<Answer> {
  const as = init.as === undefined ? OPERATOR : init.as;
  const response = await fetch(`${adminUrl}${path}`, {
    method: init.method ?? 'GET',
    headers: {
      ...(as === null ? {} : { authorization: `Bearer ${as}` }),
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  const text = await response.text();
  const answer = {
    status: response.status,
    headers: response.headers,
    text,
    json: text.startsWith('{') ? (JSON.parse(text) as unknown) : undefined,
  };
  answers.push(answer);
  expect(answer.headers.get('cache-control'), path).toBe('no-store');
  return answer;
}

type View = { id: string; sessionRef: string; licence: string; status: string };
const find = async (query: string): Promise<View[]> => {
  const answer = await admin(`/api/v1/connections?${query}`);
  expect(answer.status).toBe(200);
  return (answer.json as { connections: View[] }).connections;
};
const q = encodeURIComponent;

/** Resolves once the receiver has had the admin.action event of `action` by olivia. */
const actionRecorded = (action: string) =>
  until(
    () =>
      received.some(
        ({ type, body }) =>
          type === 'admin.action' && body.includes('"olivia"') && body.includes(action),
      ),
    { what: `the admin.action event of ${action}`, deadlineMs: 15_000 },
  );

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'baton-admin-api-'));
  const tokensFile = join(folder, 'tokens.json');
  await writeFile(
    tokensFile,
    JSON.stringify([entry('olivia', 'operator', OPERATOR), entry('victor', 'viewer', VIEWER)]),
  );
  receiver = await startReceiver((_req, body, res) => {
    const type = (JSON.parse(body) as { type: string }).type;
    received.push({ type, body });
    res.statusCode = type === 'admin.action' || acceptingSessionEvents ? 204 : 503;
    res.end();
  });
  const adminPort = await freePort();
  broker = await BrokerProcess.start(
    world.freshEnv({
      ADMIN_PORT: String(adminPort),
      ADMIN_TOKENS_FILE: tokensFile,
      EVENTS_WEBHOOK_URL: receiver.origin,
      EVENTS_WEBHOOK_SECRET: `whsec_${randomBytes(32).toString('base64')}`,
      EVENTS_OUTBOX_MAX: '1',
    }),
  );
  adminUrl = `http://127.0.0.1:${adminPort}`;

  // Two sessions, each with two licences: the second connection's event sets the first's aside.
  for (let i = 0; i < 2; i++) {
    const client = new Client({ publicUrl: PUBLIC_URL, instances: [broker.url] });
    const control = world.sandbox.sandbox.control;
    control.setConsent({ mode: 'approve', licenseId: 'lic-1001' });
    const first = await connectVia(client, { start: 0, callback: 0, redeem: 0 });
    control.setConsent({ mode: 'approve', licenseId: 'lic-1002' });
    const second = await connectVia(client, {
      start: 0,
      callback: 0,
      redeem: 0,
      sessionToken: first.token,
    });
    sessions.push(first, second);
  }
  await until(
    async () => {
      const answer = await admin('/api/v1/dead-letters');
      return (answer.json as { deadLetters: unknown[] }).deadLetters.length >= 2;
    },
    { what: 'two dead letters', deadlineMs: 15_000 },
  );
  acceptingSessionEvents = true;
});

afterAll(async () => {
  await broker?.stop();
  await receiver?.close();
  if (folder) await rm(folder, { recursive: true, force: true });
});

describe('the admin API on ADMIN_PORT', () => {
  it('says who a token is, and refuses a missing or wrong one (401) apart from a viewer (403)', async () => {
    expect((await admin('/api/v1/whoami')).json).toEqual(OLIVIA);
    expect((await admin('/api/v1/whoami', { as: VIEWER })).json).toEqual({
      name: 'victor',
      role: 'viewer',
    });
    const missing = await admin('/api/v1/overview', { as: null });
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toBe('Bearer realm="baton-admin"');
    expect((await admin('/api/v1/overview', { as: token() })).status).toBe(401);
    const viewer = await admin(`/api/v1/connections/${sessions[0]!.id}/disconnect`, {
      method: 'POST',
      as: VIEWER,
    });
    expect(viewer.status).toBe(403);
    expect(viewer.json).toMatchObject({ error: 'forbidden' });
  });

  it('answers the overview: the standalone Redis up, the sessions and connections', async () => {
    const overview = (await admin('/api/v1/overview')).json as {
      redis: { topology: string; masters: unknown[] };
      sessions: number | null;
      connections: { byStatus: object };
      events: { enabled: boolean; deadLetters: number };
    };
    expect(overview.redis.topology).toBe('standalone');
    expect(overview.redis.masters).toEqual([
      expect.objectContaining({ up: true, latencyMs: expect.any(Number) }),
    ]);
    // Sessions have no index: counted by a census (none yet), never by the overview itself.
    expect(overview.sessions).toBeNull();
    expect(overview.connections.byStatus).toEqual({ connected: 4, disconnected: 0 });
    expect(overview.events.enabled).toBe(true);
    expect(overview.events.deadLetters).toBeGreaterThanOrEqual(2);
  });

  it('counts by a census an operator starts (202), then answers its figures in the overview', async () => {
    const started = await admin('/api/v1/jobs/census', { method: 'POST' });
    expect(started.status).toBe(202);
    expect(started.json).toMatchObject({ state: 'running', startedBy: 'olivia' });
    let job = started.json as { state: string; finishedAt: string | null };
    await until(
      async () => {
        job = (await admin('/api/v1/jobs/census')).json as typeof job;
        return job.state !== 'running';
      },
      { what: 'the census to end', deadlineMs: 15_000, intervalMs: 100 },
    );
    expect(job).toMatchObject({
      state: 'done',
      sessions: 2,
      connections: 4,
      byStatus: { connected: 4, disconnected: 0 },
      unreadable: 0,
    });
    const overview = (await admin('/api/v1/overview')).json;
    expect(overview).toMatchObject({
      sessions: 2,
      census: { takenAt: job.finishedAt, state: 'done' },
    });
    await actionRecorded('start_census');
  });

  it('finds connections by connection id, by session reference and by licence', async () => {
    const [byId] = await find(`connection=${sessions[0]!.id}`);
    expect(byId).toMatchObject({ id: sessions[0]!.id, status: 'connected' });
    expect(byId!.sessionRef).toMatch(/^ses_[A-Za-z0-9_-]{22}$/);
    const bySession = await find(`session=${byId!.sessionRef}`);
    expect(bySession.map((view) => view.id).sort()).toEqual(
      [sessions[0]!.id, sessions[1]!.id].sort(),
    );
    const byLicence = await find(`licence=${q(byId!.licence)}`);
    expect(byLicence.map((view) => view.id).sort()).toEqual(
      [sessions[0]!.id, sessions[2]!.id].sort(),
    );
    expect((await admin('/api/v1/connections?licence=http%3A%2F%2Fexample.com')).status).toBe(400);
    expect((await find(`connection=${'x'.repeat(22)}`)).length).toBe(0);
  });

  it('disconnects a connection: the extension is asked to reconnect', async () => {
    const [session] = sessions;
    const answer = await admin(`/api/v1/connections/${session!.id}/disconnect`, {
      method: 'POST',
    });
    expect(answer.json).toEqual({ ok: true, count: 1 });
    await actionRecorded('disconnect');
    const [view] = await find(`connection=${session!.id}`);
    expect(view).toMatchObject({ status: 'disconnected' });
    const client = new Client({ publicUrl: PUBLIC_URL, instances: [broker.url] });
    expect((await callApi(client, 0, session!)).status).toBe(401);
  });

  it('ends a session by its reference: its token no longer works', async () => {
    const [view] = await find(`connection=${sessions[1]!.id}`);
    const answer = await admin(`/api/v1/sessions/${view!.sessionRef}/end`, { method: 'POST' });
    expect(answer.json).toEqual({ ok: true, count: 1 });
    await actionRecorded('end_session');
    expect(await find(`session=${view!.sessionRef}`)).toEqual([]);
    const client = new Client({ publicUrl: PUBLIC_URL, instances: [broker.url] });
    expect((await callApi(client, 0, sessions[1]!)).status).toBe(401);
    const again = await admin(`/api/v1/sessions/${view!.sessionRef}/end`, { method: 'POST' });
    expect(again.status).toBe(404);
  });

  it('ends every session that holds a licence', async () => {
    const [view] = await find(`connection=${sessions[2]!.id}`);
    const answer = await admin('/api/v1/licences/end-sessions', {
      method: 'POST',
      body: { licence: view!.licence },
    });
    expect(answer.json).toEqual({ ok: true, count: 1 });
    await actionRecorded('end_sessions_of_licence');
    expect(await find(`licence=${q(view!.licence)}`)).toEqual([]);
    const overview = (await admin('/api/v1/overview')).json as {
      connections: { byStatus: object };
    };
    expect(overview.connections.byStatus).toEqual({ connected: 0, disconnected: 0 });
  });

  it('lists dead letters, redelivers one and discards another', async () => {
    const listed = await admin('/api/v1/dead-letters?reason=outbox_full&limit=10');
    const letters = (listed.json as { deadLetters: { id: string; reason: string }[] }).deadLetters;
    expect(letters.length).toBeGreaterThanOrEqual(2);
    expect(letters.every((letter) => letter.reason === 'outbox_full')).toBe(true);
    const [first, second] = letters;
    const discarded = await admin(`/api/v1/dead-letters/${second!.id}`, { method: 'DELETE' });
    expect(discarded.json).toEqual({ ok: true, count: 1 });
    await actionRecorded('discard');
    expect((await admin(`/api/v1/dead-letters/${second!.id}`, { method: 'DELETE' })).status).toBe(
      404,
    );
    const redelivered = await admin(`/api/v1/dead-letters/${first!.id}/redeliver`, {
      method: 'POST',
    });
    expect(redelivered.json).toEqual({ ok: true, count: 1 });
    await until(() => received.some(({ body }) => body.includes(first!.id)), {
      what: 'the redelivered event',
      deadlineMs: 15_000,
    });
  });

  it('answers 404 on the public port to every admin path, token or not', async () => {
    const id = sessions[0]!.id;
    const paths: [string, string][] = [
      ['GET', '/console.js'],
      ['GET', '/console.css'],
      ['GET', '/api/v1/whoami'],
      ['GET', '/api/v1/overview'],
      ['GET', `/api/v1/connections?connection=${id}`],
      ['POST', `/api/v1/connections/${id}/disconnect`],
      ['POST', `/api/v1/sessions/ses_${'A'.repeat(22)}/end`],
      ['POST', '/api/v1/licences/end-sessions'],
      ['GET', '/api/v1/dead-letters'],
      ['POST', `/api/v1/dead-letters/msg_${'A'.repeat(22)}/redeliver`],
      ['DELETE', `/api/v1/dead-letters/msg_${'A'.repeat(22)}`],
      ['GET', '/api/v1/jobs/reencrypt'],
      ['POST', '/api/v1/jobs/reencrypt'],
      ['GET', '/api/v1/jobs/census'],
      ['POST', '/api/v1/jobs/census'],
      ['POST', '/api/v1/events/sweep'],
    ];
    for (const [method, path] of paths)
      for (const headers of [{}, { authorization: `Bearer ${OPERATOR}` }]) {
        const response = await fetch(`${broker.url}${path}`, { method, headers });
        expect(response.status, `${method} ${path}`).toBe(404);
        expect(await response.json()).toEqual({ error: 'not_found', message: 'No such route.' });
      }
    // And the admin listener serves the console the public port does not.
    const page = await fetch(`${adminUrl}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
  });

  it('never shows a token, a session handle or id, or the client secret, in an answer or a log line', async () => {
    const sessionIds = sessions.map((session) =>
      createHash('sha256').update(session.token).digest('base64url'),
    );
    const secrets = [
      ...world.control.secrets(),
      CLIENT_SECRET,
      OPERATOR,
      VIEWER,
      ...sessions.map((session) => session.token),
      ...sessionIds,
    ];
    expect(world.control.secrets().length).toBeGreaterThan(0);
    expect(answers.length).toBeGreaterThan(20);
    await logWritten(broker);
    const haystacks = [
      ...answers.map((answer) => `${[...answer.headers].flat().join(' ')} ${answer.text}`),
      ...broker.lines,
    ];
    for (const secret of secrets) {
      const found = haystacks.find((text) => text.includes(secret));
      expect(found, `a secret (${secret.slice(0, 8)}…) leaked`).toBeUndefined();
    }
    // Every call was logged, with its actor.
    const calls = broker.lines.filter((line) => line.includes('"admin call"'));
    expect(calls.length).toBeGreaterThanOrEqual(answers.length);
    expect(calls.some((line) => line.includes('"actor":"olivia"'))).toBe(true);
  });
});
