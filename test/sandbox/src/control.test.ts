import { describe, expect, it } from 'vitest';
import { DEV_CLIENT } from './state.ts';
import {
  authorizeUrl,
  BAKKERIJ,
  callbackParams,
  connect,
  devRequest,
  get,
  LOTTE,
  refreshWith,
  START,
  start,
  usersMe,
} from './testing.ts';

const postJson = (url: string, body: unknown): Promise<Response> =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('/_control/', () => {
  it.each(['/_control/counters', '/_control/secrets', '/_control/clock'])(
    'is 404 when control is not enabled (%s)',
    async (path) => {
      await using running = await start();
      const response = await get(`${running.url}${path}`);
      expect(response.status).toBe(404);
    },
  );

  it('POST /_control/clients registers a client its authorization requests then use', async () => {
    await using running = await start({ control: true });
    const redirectUri = 'http://127.0.0.1:45678/auth/callback';
    const registered = await postJson(`${running.url}/_control/clients`, {
      client_id: 'baton-test',
      client_secret: 'sbx_secret_test-0123456789',
      redirect_uris: [redirectUri],
    });
    expect(registered.status).toBe(200);
    running.sandbox.control.setConsent({ mode: 'deny' });
    const params = devRequest({ client_id: 'baton-test', redirect_uri: redirectUri });
    const response = await get(authorizeUrl(running, params));
    expect(response.headers.get('location')).toBe(`${redirectUri}?error=access_denied`);
  });

  it('POST /_control/clients replaces a client with the same client_id', async () => {
    await using running = await start({ control: true });
    await postJson(`${running.url}/_control/clients`, {
      ...DEV_CLIENT,
      redirect_uris: ['http://127.0.0.1:1/new'],
    });
    const response = await get(authorizeUrl(running, devRequest()));
    expect(response.status).toBe(400);
  });

  it('the clock reads, sets and advances over HTTP', async () => {
    await using running = await start({ control: true });
    const read = async () =>
      ((await (await get(`${running.url}/_control/clock`)).json()) as { now: number }).now;
    expect(await read()).toBe(START);
    await postJson(`${running.url}/_control/clock/set`, { now: START + 10_000 });
    expect(await read()).toBe(START + 10_000);
    await postJson(`${running.url}/_control/clock/advance`, { ms: 5_000 });
    expect(await read()).toBe(START + 15_000);
    expect(running.sandbox.control.clock.now()).toBe(START + 15_000);
  });

  it('the clock follows the injected clock, offset by set and advance', async () => {
    let time = 1_000;
    await using running = await start({ now: () => time });
    const { clock } = running.sandbox.control;
    clock.advance(500);
    time = 2_000;
    expect(clock.now()).toBe(2_500);
    clock.set(10_000);
    time = 3_000;
    expect(clock.now()).toBe(11_000);
  });

  it('POST /_control/consent scripts an approval', async () => {
    await using running = await start({ control: true });
    const response = await postJson(`${running.url}/_control/consent`, {
      mode: 'approve',
      email: LOTTE.email,
      licenseId: BAKKERIJ.id,
    });
    expect(response.status).toBe(200);
    expect(await (await get(`${running.url}/_control/consent`)).json()).toEqual({
      consent: { mode: 'approve', email: LOTTE.email, licenseId: BAKKERIJ.id },
    });
    const callback = await get(authorizeUrl(running, devRequest({ state: 's' })));
    expect(callbackParams(callback).get('api_url')).toBe(running.sandbox.apiUrl(BAKKERIJ.id));
  });

  it('POST /_control/revoke and /_control/expire-access-tokens act on the grants', async () => {
    await using running = await start({ control: true });
    const first = await connect(running, BAKKERIJ);
    const expired = await postJson(`${running.url}/_control/expire-access-tokens`, {
      licenseId: BAKKERIJ.id,
    });
    expect(await expired.json()).toEqual({ expired: 1 });
    expect((await usersMe(first.apiUrl, first.access_token)).status).toBe(401);
    const revoked = await postJson(`${running.url}/_control/revoke`, { licenseId: BAKKERIJ.id });
    expect(await revoked.json()).toEqual({ revoked: 1 });
    expect((await refreshWith(first.apiUrl, first.refresh_token)).status).toBe(400);
  });

  it('POST /_control/settings turns the revoke-on-reuse switch', async () => {
    await using running = await start({ control: true });
    await postJson(`${running.url}/_control/settings`, { revokeOnRefreshReuse: true });
    const { apiUrl, refresh_token } = await connect(running, BAKKERIJ);
    const next = (await (await refreshWith(apiUrl, refresh_token)).json()) as {
      refresh_token: string;
    };
    await refreshWith(apiUrl, refresh_token);
    expect((await refreshWith(apiUrl, next.refresh_token)).status).toBe(400);
  });

  it('counts code exchanges, refreshes, token errors, reuses, API calls and 401s', async () => {
    await using running = await start({ control: true });
    const { apiUrl, access_token, refresh_token } = await connect(running, BAKKERIJ);
    await refreshWith(apiUrl, refresh_token);
    await refreshWith(apiUrl, refresh_token);
    await usersMe(apiUrl, access_token);
    await usersMe(apiUrl, 'sbx_at_nope');
    const counters = await (await get(`${running.url}/_control/counters`)).json();
    expect(counters).toEqual({
      code_exchanges: 1,
      refreshes: 1,
      token_errors: 1,
      reuse_detected: 1,
      api_calls: 2,
      api_unauthorized: 1,
    });
  });

  it('logs every token and API request with method, host, path and query, headers and time', async () => {
    await using running = await start({ control: true });
    const { apiUrl, access_token } = await connect(running, BAKKERIJ);
    running.sandbox.control.clock.advance(1_000);
    await get(`${apiUrl}/users.me?fields=email`, {
      headers: { authorization: `Bearer ${access_token}`, 'x-trace': 't1' },
    });
    const { requests } = (await (await get(`${running.url}/_control/requests`)).json()) as {
      requests: Array<Record<string, unknown>>;
    };
    const host = new URL(running.url).host;
    expect(requests).toEqual([
      expect.objectContaining({
        target: 'token',
        method: 'POST',
        host,
        path: `/licenses/${BAKKERIJ.id}/oauth2/access_token`,
        time: START,
        status: 200,
      }),
      expect.objectContaining({
        target: 'api',
        method: 'GET',
        host,
        path: `/licenses/${BAKKERIJ.id}/users.me?fields=email`,
        headers: expect.objectContaining({ 'x-trace': 't1' }),
        time: START + 1_000,
        status: 200,
      }),
    ]);
  });

  it('keeps only the latest entries of the request log when given a limit', async () => {
    await using running = await start({ control: true, requestLogLimit: 2 });
    const { apiUrl, access_token } = await connect(running, BAKKERIJ);
    for (let n = 0; n < 5; n++) await usersMe(apiUrl, access_token);
    await get(`${apiUrl}/users.me?last=1`, {
      headers: { authorization: `Bearer ${access_token}` },
    });
    const paths = running.sandbox.control.requests().map((entry) => entry.path);
    expect(paths).toEqual([
      `/licenses/${BAKKERIJ.id}/users.me`,
      `/licenses/${BAKKERIJ.id}/users.me?last=1`,
    ]);
    expect(running.sandbox.control.counters().api_calls).toBe(6);
  });

  it('GET /_control/secrets lists every code, token and client secret it issued or knows', async () => {
    await using running = await start({ control: true });
    const first = await connect(running, BAKKERIJ);
    const next = (await (await refreshWith(first.apiUrl, first.refresh_token)).json()) as {
      access_token: string;
      refresh_token: string;
    };
    const { secrets } = (await (await get(`${running.url}/_control/secrets`)).json()) as {
      secrets: string[];
    };
    expect(secrets).toEqual(
      expect.arrayContaining([
        DEV_CLIENT.client_secret,
        first.access_token,
        first.refresh_token,
        next.access_token,
        next.refresh_token,
      ]),
    );
    expect(secrets.filter((secret) => secret.startsWith('sbx_code_'))).toHaveLength(1);
  });

  it('POST /_control/reset empties counters, request log and faults', async () => {
    await using running = await start({ control: true });
    const { apiUrl, access_token } = await connect(running, BAKKERIJ);
    running.sandbox.control.addFault({ kind: 'status', target: 'api', status: 503 });
    await usersMe(apiUrl, access_token);
    await postJson(`${running.url}/_control/reset`, {});
    const { control } = running.sandbox;
    expect(control.counters()).toMatchObject({ code_exchanges: 0, api_calls: 0 });
    expect(control.requests()).toEqual([]);
    expect(control.faults()).toEqual([]);
    expect((await usersMe(apiUrl, access_token)).status).toBe(200);
  });

  it.each([
    ['/_control/clients', { client_id: 'x', client_secret: 's', redirect_uris: ['not a url'] }],
    ['/_control/clock/advance', { ms: 'soon' }],
    ['/_control/consent', { mode: 'maybe' }],
    ['/_control/consent', { mode: 'approve', licenseId: 'lic-9999' }],
    ['/_control/faults', { kind: 'earthquake' }],
    ['/_control/faults', { kind: 'status', target: 'api', status: 200 }],
    ['/_control/faults', { kind: 'set_cookie', target: 'token', cookie: 'a=1' }],
    ['/_control/faults', { kind: 'status', target: 'api', status: 503, count: 0 }],
    ['/_control/revoke', {}],
  ])('POST %s answers 400 to a malformed body %j', async (path, body) => {
    await using running = await start({ control: true });
    const response = await postJson(`${running.url}${path}`, body);
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: 'invalid_request' });
  });
});
