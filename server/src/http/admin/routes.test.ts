import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StoreUnavailableError } from '../../store/types.ts';
import { CENSUS, CONNECTION, DEAD_LETTER, JOB, OVERVIEW } from './fake-use-cases.ts';
import { startTestAdmin, type TestAdmin } from './test-server.ts';

let admin: TestAdmin;
beforeEach(async () => {
  admin = await startTestAdmin();
});
afterEach(() => admin.close());

const REF = `ses_${'b'.repeat(22)}`;
const ID = 'Q2Fuz3Jhdm9sdXRpb24xMA';
const MSG = 'msg_AAAAAAAAAAAAAAAAAAAAAA';
const OLIVIA = { name: 'olivia', role: 'operator' };

async function expectError(response: Response, status: number, error: string, message?: RegExp) {
  expect(response.status).toBe(status);
  expect(response.headers.get('cache-control')).toBe('no-store');
  const body = (await response.json()) as { error: string; message: string };
  expect(body).toEqual({ error, message: expect.any(String) });
  if (message) expect(body.message).toMatch(message);
}

describe('reads', () => {
  it('GET /api/v1/overview answers the overview', async () => {
    const response = await admin.call('/api/v1/overview');
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(await response.json()).toEqual(OVERVIEW);
  });

  it.each([
    [`connection=${ID}`, { connectionId: ID }, 100],
    [`session=${REF}&limit=5`, { sessionRef: REF }, 5],
    [
      'licence=https%3A%2F%2Fapi.example.com%2Fv1&limit=500',
      { licence: 'https://api.example.com/v1' },
      500,
    ],
    ['licence=http%3A%2F%2F127.0.0.1%3A8788', { licence: 'http://127.0.0.1:8788' }, 100],
    ['licence=http%3A%2F%2Flocalhost%3A8788%2Fapi', { licence: 'http://localhost:8788/api' }, 100],
  ])('GET /api/v1/connections?%s finds them that way', async (query, by, limit) => {
    const response = await admin.call(`/api/v1/connections?${query}`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ connections: [CONNECTION] });
    expect(admin.useCases.calls).toEqual([{ name: 'findConnections', args: [by, limit] }]);
  });

  it('GET /api/v1/dead-letters lists them, by reason when asked', async () => {
    expect(await (await admin.call('/api/v1/dead-letters')).json()).toEqual({
      deadLetters: [DEAD_LETTER],
    });
    await admin.call('/api/v1/dead-letters?limit=20&reason=outbox_full');
    expect(admin.useCases.calls.map((call) => call.args)).toEqual([
      [{ limit: 100 }],
      [{ limit: 20, reason: 'outbox_full' }],
    ]);
  });

  it('GET /api/v1/jobs/reencrypt answers the job, to a viewer too', async () => {
    const response = await admin.call('/api/v1/jobs/reencrypt', { token: admin.viewer });
    expect(await response.json()).toEqual(JOB);
  });

  it('GET /api/v1/jobs/census answers the census, to a viewer too', async () => {
    const response = await admin.call('/api/v1/jobs/census', { token: admin.viewer });
    expect(await response.json()).toEqual(CENSUS);
    expect(admin.useCases.calls).toEqual([{ name: 'censusJob', args: [] }]);
  });

  it('passes no field the contract lacks (a use case that adds one by mistake)', async () => {
    admin.useCases.findConnections = () =>
      Promise.resolve([{ ...CONNECTION, sid: 'the-session-id', accessToken: 'at' }]);
    const text = await (await admin.call(`/api/v1/connections?connection=${ID}`)).text();
    expect(text).not.toContain('the-session-id');
    expect(text).not.toContain('accessToken');
  });
});

describe('actions', () => {
  it.each([
    ['POST', `/api/v1/connections/${ID}/disconnect`, 'disconnect', [ID, OLIVIA], undefined],
    ['POST', `/api/v1/sessions/${REF}/end`, 'endSession', [REF, OLIVIA], undefined],
    [
      'POST',
      '/api/v1/licences/end-sessions',
      'endSessionsOfLicence',
      ['https://api.example.com/v1', OLIVIA],
      '{"licence":"https://api.example.com/v1"}',
    ],
    ['POST', `/api/v1/dead-letters/${MSG}/redeliver`, 'redeliver', [MSG, OLIVIA], undefined],
    ['DELETE', `/api/v1/dead-letters/${MSG}`, 'discard', [MSG, OLIVIA], undefined],
  ])('%s %s calls %s with the actor', async (method, path, name, args, body) => {
    const response = await admin.call(path, { method, ...(body ? { body } : {}) });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ ok: true, count: 1 });
    expect(admin.useCases.calls).toEqual([{ name, args }]);
  });

  it('answers 404 not_found when there was nothing to act on', async () => {
    admin.useCases.result = { ok: false, count: 0, error: 'not_found' };
    await expectError(
      await admin.call(`/api/v1/connections/${ID}/disconnect`, { method: 'POST' }),
      404,
      'not_found',
    );
  });

  it('POST /api/v1/jobs/reencrypt starts the job: 202', async () => {
    const response = await admin.call('/api/v1/jobs/reencrypt', { method: 'POST' });
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ ...JOB, state: 'running' });
  });

  it('POST /api/v1/jobs/census starts the census with the actor: 202', async () => {
    const response = await admin.call('/api/v1/jobs/census', { method: 'POST' });
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ ...CENSUS, state: 'running' });
    expect(admin.useCases.calls).toEqual([{ name: 'startCensus', args: [OLIVIA] }]);
  });

  it('POST /api/v1/jobs/census is refused to a viewer: 403, and nothing started', async () => {
    const response = await admin.call('/api/v1/jobs/census', {
      method: 'POST',
      token: admin.viewer,
    });
    await expectError(response, 403, 'forbidden');
    expect(admin.useCases.calls).toEqual([]);
  });

  it('POST /api/v1/events/sweep schedules the outboxes', async () => {
    const response = await admin.call('/api/v1/events/sweep', { method: 'POST' });
    expect(await response.json()).toEqual({ ok: true, outboxes: 4 });
  });
});

describe('bad input: 400 invalid_request, naming what is wrong, and no use case called', () => {
  it.each([
    ['no way to find them', '/api/v1/connections', /exactly one of/],
    ['two ways', `/api/v1/connections?connection=${ID}&session=${REF}`, /exactly one of/],
    [
      'a connection id too long',
      `/api/v1/connections?connection=${'a'.repeat(65)}`,
      /^connection must be a connection id/,
    ],
    ['a connection id with a dot', '/api/v1/connections?connection=a.b', /^connection must be/],
    [
      'a session id, not a reference',
      `/api/v1/connections?session=${'b'.repeat(43)}`,
      /^session must be a session reference/,
    ],
    [
      'a reference too short',
      `/api/v1/connections?session=ses_${'b'.repeat(21)}`,
      /^session must be/,
    ],
    [
      'a reference with a bad character',
      `/api/v1/connections?session=ses_${'b'.repeat(21)}!`,
      /^session must be/,
    ],
    [
      'a licence not a URL',
      '/api/v1/connections?licence=api.example.com',
      /^licence must be a licence api_url/,
    ],
    [
      'an http licence off loopback',
      '/api/v1/connections?licence=http%3A%2F%2Fapi.example.com',
      /^licence must be/,
    ],
    [
      'a licence with credentials',
      '/api/v1/connections?licence=https%3A%2F%2Fu%3Ap%40api.example.com',
      /^licence must be/,
    ],
    [
      'a licence with a query',
      '/api/v1/connections?licence=https%3A%2F%2Fapi.example.com%2F%3Fa%3D1',
      /^licence must be/,
    ],
    [
      'a licence with a fragment',
      '/api/v1/connections?licence=https%3A%2F%2Fapi.example.com%2F%23x',
      /^licence must be/,
    ],
    [
      'a javascript: licence',
      '/api/v1/connections?licence=javascript%3Aalert(1)',
      /^licence must be/,
    ],
    [
      'a licence too long',
      `/api/v1/connections?licence=https%3A%2F%2Fa.example%2F${'a'.repeat(2048)}`,
      /at most 2048/,
    ],
    [
      'a limit of 0',
      `/api/v1/connections?connection=${ID}&limit=0`,
      /^limit must be an integer from 1 to 500/,
    ],
    [
      'a limit of 501',
      `/api/v1/connections?connection=${ID}&limit=501`,
      /^limit must be an integer/,
    ],
    ['a negative limit', `/api/v1/connections?connection=${ID}&limit=-1`, /^limit must be/],
    ['a fractional limit', `/api/v1/connections?connection=${ID}&limit=1.5`, /^limit must be/],
    [
      'a limit in exponent form',
      `/api/v1/connections?connection=${ID}&limit=1e2`,
      /^limit must be/,
    ],
    ['an empty limit', `/api/v1/connections?connection=${ID}&limit=`, /^limit must be/],
    [
      'a limit twice',
      `/api/v1/connections?connection=${ID}&limit=1&limit=2`,
      /^limit must be given once/,
    ],
    [
      'an unknown parameter',
      `/api/v1/connections?connection=${ID}&token=abc`,
      /^Unknown query parameter: token/,
    ],
    ['an unknown reason', '/api/v1/dead-letters?reason=lost', /^reason /],
    ['a dead-letter limit of 1000', '/api/v1/dead-letters?limit=1000', /^limit must be/],
    ['a query where none is taken', '/api/v1/overview?x=1', /takes no query/],
  ])('GET with %s', async (_what, path, message) => {
    await expectError(await admin.call(path), 400, 'invalid_request', message);
    expect(admin.useCases.calls).toEqual([]);
  });

  it.each([
    [
      'a connection id with a bad character',
      `/api/v1/connections/a%2Cb/disconnect`,
      /^id must be a connection id/,
    ],
    ['a connection id too long', `/api/v1/connections/${'a'.repeat(65)}/disconnect`, /^id must be/],
    [
      'a session id, not a reference',
      `/api/v1/sessions/${'b'.repeat(43)}/end`,
      /^ref must be a session reference/,
    ],
    ['an event id without msg_', `/api/v1/dead-letters/${ID}/redeliver`, /^id must be an event id/],
  ])('POST with %s', async (_what, path, message) => {
    await expectError(await admin.call(path, { method: 'POST' }), 400, 'invalid_request', message);
    expect(admin.useCases.calls).toEqual([]);
  });

  it.each([
    ['no body', undefined, /JSON object/],
    ['a body that is not JSON', '{licence:', /could not be read/],
    ['a JSON array', '["https://api.example.com"]', /JSON object/],
    ['no licence', '{}', /^licence is required/],
    ['a licence that is not one', '{"licence":"ftp://api.example.com"}', /^licence must be/],
    ['another field', '{"licence":"https://api.example.com","all":true}', /^Unknown body: all/],
    [
      'a body too large',
      JSON.stringify({ licence: `https://a.example/${'a'.repeat(5000)}` }),
      /too large/,
    ],
  ])('POST /api/v1/licences/end-sessions with %s', async (_what, body, message) => {
    const response = await admin.call('/api/v1/licences/end-sessions', {
      method: 'POST',
      ...(body === undefined ? {} : { body }),
    });
    await expectError(response, 400, 'invalid_request', message);
    expect(admin.useCases.calls).toEqual([]);
  });

  it('never echoes what it refused', async () => {
    const secret = 'batadm_pasted-in-the-wrong-place';
    const answers = await Promise.all([
      admin.call(`/api/v1/connections?session=${secret}`),
      admin.call(`/api/v1/connections?${secret}=1`),
      admin.call(`/api/v1/connections/${secret}.x/disconnect`, { method: 'POST' }),
      admin.call('/api/v1/licences/end-sessions', {
        method: 'POST',
        body: JSON.stringify({ licence: secret }),
      }),
    ]);
    for (const answer of answers) expect(await answer.text()).not.toContain('pasted-in-the-wrong');
  });
});

describe('routes', () => {
  it.each([
    ['an unknown path', 'GET', '/api/v1/nothing'],
    ['a trailing slash', 'GET', '/api/v1/overview/'],
    ['another case', 'GET', '/api/v1/Overview'],
    ['another version', 'GET', '/api/v2/overview'],
    ['a method the route lacks', 'DELETE', '/api/v1/overview'],
    ['HEAD', 'HEAD', '/api/v1/overview'],
    ['OPTIONS', 'OPTIONS', '/api/v1/overview'],
    ['a path outside /api', 'GET', '/metrics'],
  ])('answers 404 not_found to %s', async (_what, method, path) => {
    const response = await admin.call(path, { method });
    expect(response.status).toBe(404);
    expect(response.headers.get('cache-control')).toBe('no-store');
    if (method !== 'HEAD')
      expect(await response.json()).toEqual({ error: 'not_found', message: 'No such route.' });
  });

  it('answers 503 upstream_unavailable with Retry-After while the store is down', async () => {
    admin.useCases.failWith = new StoreUnavailableError('down');
    const response = await admin.call('/api/v1/overview');
    await expectError(response, 503, 'upstream_unavailable');
    expect(response.headers.get('retry-after')).toBe('5');
  });

  it('answers 500 server_error, saying nothing of it, on an unexpected failure', async () => {
    admin.useCases.failWith = new Error('secret detail');
    const response = await admin.call('/api/v1/overview');
    expect(response.status).toBe(500);
    expect(await response.text()).not.toContain('secret detail');
  });
});
