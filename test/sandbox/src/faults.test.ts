import { describe, expect, it } from 'vitest';
import { PREFIX } from './state.ts';
import {
  BAKKERIJ,
  connect,
  exchangeFields,
  issueCode,
  refreshWith,
  start,
  tokenRequest,
  usersMe,
  VASTGOED,
} from './testing.ts';

const postJson = (url: string, body: unknown): Promise<Response> =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('fault: latency', () => {
  // Latency is the one fault that must take real time: it exists to trip the client's timeouts.
  it('delays the token endpoint by the given ms, then answers normally', async () => {
    await using running = await start();
    const { code, apiUrl } = await issueCode(running, BAKKERIJ);
    running.sandbox.control.addFault({ kind: 'latency', target: 'token', ms: 150, count: 1 });
    const started = performance.now();
    const response = await tokenRequest(apiUrl, exchangeFields(code));
    expect(performance.now() - started).toBeGreaterThanOrEqual(140);
    expect(response.status).toBe(200);
  });

  it('delays the API, and a client that gives up first gets nothing', async () => {
    await using running = await start();
    const { apiUrl, access_token } = await connect(running, BAKKERIJ);
    running.sandbox.control.addFault({ kind: 'latency', target: 'api', ms: 5_000 });
    const response = fetch(`${apiUrl}/users.me`, {
      headers: { authorization: `Bearer ${access_token}` },
      signal: AbortSignal.timeout(50),
    });
    await expect(response).rejects.toThrow(/timeout|abort/i);
  });
});

describe('fault: status', () => {
  it('answers the token endpoint with the status for the next N requests, then stops', async () => {
    await using running = await start();
    const { apiUrl, refresh_token } = await connect(running, BAKKERIJ);
    running.sandbox.control.addFault({ kind: 'status', target: 'token', status: 503, count: 2 });
    expect((await refreshWith(apiUrl, refresh_token)).status).toBe(503);
    expect((await refreshWith(apiUrl, refresh_token)).status).toBe(503);
    // The endpoint did nothing meanwhile: the refresh token is still unused.
    expect((await refreshWith(apiUrl, refresh_token)).status).toBe(200);
    expect(running.sandbox.control.counters()).toMatchObject({ refreshes: 1, token_errors: 0 });
  });

  it('answers the API with 429 and Retry-After until cleared', async () => {
    await using running = await start();
    const { apiUrl, access_token } = await connect(running, BAKKERIJ);
    const { control } = running.sandbox;
    control.addFault({ kind: 'status', target: 'api', status: 429, retryAfter: 30 });
    for (let i = 0; i < 3; i++) {
      const response = await usersMe(apiUrl, access_token);
      expect(response.status).toBe(429);
      expect(response.headers.get('retry-after')).toBe('30');
    }
    control.clearFaults();
    expect((await usersMe(apiUrl, access_token)).status).toBe(200);
  });

  it("applies only to the given license's api_url when licenseId is set", async () => {
    await using running = await start();
    const faulted = await connect(running, BAKKERIJ);
    const spared = await connect(running, VASTGOED);
    running.sandbox.control.addFault({
      kind: 'status',
      target: 'api',
      status: 500,
      licenseId: BAKKERIJ.id,
    });
    expect((await usersMe(spared.apiUrl, spared.access_token)).status).toBe(200);
    expect((await usersMe(faulted.apiUrl, faulted.access_token)).status).toBe(500);
  });
});

describe('fault: redirect', () => {
  it.each([
    ['token', 302],
    ['api', 307],
  ] as const)('answers the %s target with a %i to the given Location', async (target, status) => {
    await using running = await start();
    const { apiUrl, access_token, refresh_token } = await connect(running, BAKKERIJ);
    const location = 'http://127.0.0.1:1/elsewhere';
    running.sandbox.control.addFault({ kind: 'redirect', target, location, status, count: 1 });
    const response =
      target === 'token'
        ? await refreshWith(apiUrl, refresh_token)
        : await usersMe(apiUrl, access_token);
    expect(response.status).toBe(status);
    expect(response.headers.get('location')).toBe(location);
  });
});

describe('fault: drop_after_rotate', () => {
  it('rotates the refresh token, stores the new pair, then destroys the socket without answering', async () => {
    await using running = await start();
    const { control } = running.sandbox;
    const { apiUrl, refresh_token } = await connect(running, BAKKERIJ);
    const known = new Set(control.secrets());
    control.addFault({ kind: 'drop_after_rotate', count: 1 });
    await expect(refreshWith(apiUrl, refresh_token)).rejects.toThrow();
    expect(control.counters()).toMatchObject({ refreshes: 1 });
    // The old refresh token was used...
    expect((await refreshWith(apiUrl, refresh_token)).status).toBe(400);
    // ...and the pair nobody received was stored: it works.
    const lost = control.secrets().filter((secret) => !known.has(secret));
    const lostRefresh = lost.find((secret) => secret.startsWith(PREFIX.refresh)) ?? '';
    const lostAccess = lost.find((secret) => secret.startsWith(PREFIX.access)) ?? '';
    expect((await usersMe(apiUrl, lostAccess)).status).toBe(200);
    expect((await refreshWith(apiUrl, lostRefresh)).status).toBe(200);
  });

  it('leaves code exchanges alone unless grant is auth_code', async () => {
    await using running = await start();
    running.sandbox.control.addFault({ kind: 'drop_after_rotate' });
    const exchanged = await issueCode(running, BAKKERIJ);
    expect((await tokenRequest(exchanged.apiUrl, exchangeFields(exchanged.code))).status).toBe(200);
    running.sandbox.control.clearFaults();
    running.sandbox.control.addFault({ kind: 'drop_after_rotate', grant: 'auth_code' });
    const lost = await issueCode(running, BAKKERIJ);
    await expect(tokenRequest(lost.apiUrl, exchangeFields(lost.code))).rejects.toThrow();
  });
});

describe('fault: token_body', () => {
  it('answers the token endpoint with exactly the given status, content type and body', async () => {
    await using running = await start();
    const { code, apiUrl } = await issueCode(running, BAKKERIJ);
    running.sandbox.control.addFault({
      kind: 'token_body',
      status: 200,
      contentType: 'text/html',
      body: '<html>not json</html>',
      count: 1,
    });
    const response = await tokenRequest(apiUrl, exchangeFields(code));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html');
    expect(await response.text()).toBe('<html>not json</html>');
    // The endpoint did not run: the code is still good.
    expect((await tokenRequest(apiUrl, exchangeFields(code))).status).toBe(200);
  });
});

describe('fault: set_cookie', () => {
  it('adds a Set-Cookie header to API answers, and not to the token endpoint', async () => {
    await using running = await start();
    const { apiUrl, access_token, refresh_token } = await connect(running, BAKKERIJ);
    running.sandbox.control.addFault({ kind: 'set_cookie', cookie: 'tracker=1; Path=/' });
    const api = await usersMe(apiUrl, access_token);
    const token = await refreshWith(apiUrl, refresh_token);
    expect(api.status).toBe(200);
    expect(api.headers.get('set-cookie')).toBe('tracker=1; Path=/');
    expect(token.headers.get('set-cookie')).toBeNull();
  });
});

describe('POST /_control/faults', () => {
  it('adds a fault over HTTP, lists it with its remaining uses, and DELETE clears them', async () => {
    await using running = await start({ control: true });
    const { apiUrl, access_token } = await connect(running, BAKKERIJ);
    const added = await postJson(`${running.url}/_control/faults`, {
      kind: 'status',
      target: 'api',
      status: 502,
      count: 3,
    });
    expect(added.status).toBe(201);
    expect((await usersMe(apiUrl, access_token)).status).toBe(502);
    const listed = (await (await fetch(`${running.url}/_control/faults`)).json()) as {
      faults: Array<{ remaining: number }>;
    };
    expect(listed.faults).toEqual([expect.objectContaining({ remaining: 2 })]);
    await fetch(`${running.url}/_control/faults`, { method: 'DELETE' });
    expect((await usersMe(apiUrl, access_token)).status).toBe(200);
  });
});
