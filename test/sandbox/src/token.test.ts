import { describe, expect, it } from 'vitest';
import type { SandboxClient } from './state.ts';
import { DEV_CLIENT } from './state.ts';
import {
  BAKKERIJ,
  connect,
  exchangeFields,
  issueCode,
  REDIRECT_URI,
  refreshWith,
  start,
  tokenEndpoint,
  tokenRequest,
  usersMe,
  VASTGOED,
} from './testing.ts';

const OTHER_CLIENT: SandboxClient = {
  client_id: 'other-integration',
  client_secret: 'sbx_secret_other-integration-0123456789',
  redirect_uris: ['http://127.0.0.1:9999/callback'],
};

async function errorOf(response: Response) {
  return { status: response.status, body: (await response.json()) as unknown };
}

describe('POST {api_url}/oauth2/access_token with grant_type=auth_code', () => {
  it('answers exactly token_type, expires_in, access_token and refresh_token, with Cache-Control: no-store', async () => {
    await using running = await start();
    const { code, apiUrl } = await issueCode(running, BAKKERIJ);
    const response = await tokenRequest(apiUrl, exchangeFields(code));
    const body = (await response.json()) as Record<string, unknown>;
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(Object.keys(body).sort()).toEqual(
      ['access_token', 'expires_in', 'refresh_token', 'token_type'].sort(),
    );
    expect(body).toMatchObject({ token_type: 'Bearer', expires_in: 3600 });
    expect(body.access_token).toMatch(/^sbx_at_[A-Za-z0-9_-]{32,}$/);
    expect(body.refresh_token).toMatch(/^sbx_rt_[A-Za-z0-9_-]{32,}$/);
  });

  it('accepts a code 119 s after it was issued', async () => {
    await using running = await start();
    const { code, apiUrl } = await issueCode(running, BAKKERIJ);
    running.sandbox.control.clock.advance(119_999);
    expect((await tokenRequest(apiUrl, exchangeFields(code))).status).toBe(200);
  });

  it('refuses a code 120 s after it was issued with invalid_grant', async () => {
    await using running = await start();
    const { code, apiUrl } = await issueCode(running, BAKKERIJ);
    running.sandbox.control.clock.advance(120_000);
    expect(await errorOf(await tokenRequest(apiUrl, exchangeFields(code)))).toEqual({
      status: 400,
      body: { error: 'invalid_grant', error_description: 'The authorization code expired.' },
    });
  });

  it('accepts a code once: the second exchange is invalid_grant', async () => {
    await using running = await start();
    const { code, apiUrl } = await issueCode(running, BAKKERIJ);
    const first = await tokenRequest(apiUrl, exchangeFields(code));
    const second = await tokenRequest(apiUrl, exchangeFields(code));
    expect(first.status).toBe(200);
    expect(await errorOf(second)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
  });

  it('refuses a code issued to another client with invalid_grant', async () => {
    await using running = await start();
    running.sandbox.control.registerClient(OTHER_CLIENT);
    const { code, apiUrl } = await issueCode(running, BAKKERIJ);
    const response = await tokenRequest(
      apiUrl,
      { ...exchangeFields(code), redirect_uri: REDIRECT_URI },
      OTHER_CLIENT,
    );
    expect(await errorOf(response)).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant', error_description: expect.stringMatching(/another client/) },
    });
  });

  it('refuses a code with another redirect_uri than the authorization request, even a registered one', async () => {
    await using running = await start();
    const second = 'http://127.0.0.1:8787/auth/callback2';
    running.sandbox.control.registerClient({
      ...DEV_CLIENT,
      redirect_uris: [REDIRECT_URI, second],
    });
    const { code, apiUrl } = await issueCode(running, BAKKERIJ);
    const response = await tokenRequest(apiUrl, { ...exchangeFields(code), redirect_uri: second });
    expect(await errorOf(response)).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant', error_description: expect.stringMatching(/redirect_uri/) },
    });
  });

  it('requires redirect_uri (invalid_request)', async () => {
    await using running = await start();
    const { code, apiUrl } = await issueCode(running, BAKKERIJ);
    const response = await tokenRequest(apiUrl, { grant_type: 'auth_code', code });
    expect(await errorOf(response)).toMatchObject({
      status: 400,
      body: { error: 'invalid_request' },
    });
  });

  it("refuses a code on another license's api_url with invalid_grant", async () => {
    await using running = await start();
    const { code } = await issueCode(running, BAKKERIJ);
    const otherApiUrl = running.sandbox.apiUrl(VASTGOED.id);
    const response = await tokenRequest(otherApiUrl, exchangeFields(code));
    expect(await errorOf(response)).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant', error_description: expect.stringMatching(/another license/) },
    });
  });

  it('refuses grant_type=authorization_code with unsupported_grant_type, leaving the code usable', async () => {
    await using running = await start();
    const { code, apiUrl } = await issueCode(running, BAKKERIJ);
    const refused = await tokenRequest(apiUrl, {
      ...exchangeFields(code),
      grant_type: 'authorization_code',
    });
    expect(await errorOf(refused)).toMatchObject({
      status: 400,
      body: { error: 'unsupported_grant_type' },
    });
    expect((await tokenRequest(apiUrl, exchangeFields(code))).status).toBe(200);
  });

  it.each([
    ['application/json', (fields: Record<string, string>) => JSON.stringify(fields)],
    ['text/plain', (fields: Record<string, string>) => new URLSearchParams(fields).toString()],
    [
      'multipart/form-data; boundary=x',
      (fields: Record<string, string>) =>
        Object.entries(fields)
          .map(
            ([name, value]) =>
              `--x\r\ncontent-disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`,
          )
          .join('') + '--x--\r\n',
    ],
  ])('refuses a %s body with 400 invalid_request', async (contentType, encode) => {
    await using running = await start();
    const { code, apiUrl } = await issueCode(running, BAKKERIJ);
    const response = await fetch(tokenEndpoint(apiUrl), {
      method: 'POST',
      headers: { 'content-type': contentType },
      body: encode({
        client_id: DEV_CLIENT.client_id,
        client_secret: DEV_CLIENT.client_secret,
        ...exchangeFields(code),
      }),
    });
    expect(await errorOf(response)).toMatchObject({
      status: 400,
      body: { error: 'invalid_request' },
    });
  });

  it.each([
    ['a wrong client_secret', { client_secret: 'sbx_secret_wrong' }],
    ['an unknown client_id', { client_id: 'nobody' }],
    ['no client_secret', { client_secret: '' }],
  ])('answers 401 invalid_client for %s', async (_, override) => {
    await using running = await start();
    const { code, apiUrl } = await issueCode(running, BAKKERIJ);
    const fields: Record<string, string> = {
      client_id: DEV_CLIENT.client_id,
      client_secret: DEV_CLIENT.client_secret,
      ...exchangeFields(code),
      ...override,
    };
    if (fields.client_secret === '') delete fields.client_secret;
    const response = await fetch(tokenEndpoint(apiUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });
    expect(await errorOf(response)).toEqual({
      status: 401,
      body: { error: 'invalid_client', error_description: 'Client authentication failed.' },
    });
  });

  it('refuses a repeated field with invalid_request', async () => {
    await using running = await start();
    const { code, apiUrl } = await issueCode(running, BAKKERIJ);
    const body = `${new URLSearchParams({ client_id: DEV_CLIENT.client_id, client_secret: DEV_CLIENT.client_secret, ...exchangeFields(code) })}&code=again`;
    const response = await fetch(tokenEndpoint(apiUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body,
    });
    expect(await errorOf(response)).toMatchObject({
      status: 400,
      body: { error: 'invalid_request' },
    });
  });

  it('answers 404 on the api_url of a license that does not exist', async () => {
    await using running = await start();
    const { code } = await issueCode(running, BAKKERIJ);
    const response = await tokenRequest(running.sandbox.apiUrl('lic-9999'), exchangeFields(code));
    expect(response.status).toBe(404);
  });
});

describe('POST {api_url}/oauth2/access_token with grant_type=refresh_token', () => {
  it('issues a new token pair in the same exact shape, and the new access token works', async () => {
    await using running = await start();
    const first = await connect(running, BAKKERIJ);
    const response = await refreshWith(first.apiUrl, first.refresh_token);
    const body = (await response.json()) as Record<string, unknown>;
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(Object.keys(body).sort()).toEqual(
      ['access_token', 'expires_in', 'refresh_token', 'token_type'].sort(),
    );
    expect(body.access_token).not.toBe(first.access_token);
    expect(body.refresh_token).not.toBe(first.refresh_token);
    expect((await usersMe(first.apiUrl, String(body.access_token))).status).toBe(200);
  });

  it('accepts a refresh token once: its second use is invalid_grant', async () => {
    await using running = await start();
    const { apiUrl, refresh_token } = await connect(running, BAKKERIJ);
    expect((await refreshWith(apiUrl, refresh_token)).status).toBe(200);
    expect(await errorOf(await refreshWith(apiUrl, refresh_token))).toEqual({
      status: 400,
      body: { error: 'invalid_grant', error_description: 'The refresh token was already used.' },
    });
  });

  it('counts a reuse as reuse_detected and, with the switch off, keeps the grant alive', async () => {
    await using running = await start();
    const { apiUrl, refresh_token } = await connect(running, BAKKERIJ);
    const next = (await (await refreshWith(apiUrl, refresh_token)).json()) as {
      access_token: string;
      refresh_token: string;
    };
    await refreshWith(apiUrl, refresh_token);
    expect(running.sandbox.control.counters().reuse_detected).toBe(1);
    expect((await usersMe(apiUrl, next.access_token)).status).toBe(200);
    expect((await refreshWith(apiUrl, next.refresh_token)).status).toBe(200);
  });

  it('with revokeOnRefreshReuse, a reuse revokes every token of the grant', async () => {
    await using running = await start({ revokeOnRefreshReuse: true });
    const { apiUrl, refresh_token } = await connect(running, BAKKERIJ);
    const next = (await (await refreshWith(apiUrl, refresh_token)).json()) as {
      access_token: string;
      refresh_token: string;
    };
    await refreshWith(apiUrl, refresh_token);
    expect(running.sandbox.control.counters().reuse_detected).toBe(1);
    expect((await usersMe(apiUrl, next.access_token)).status).toBe(401);
    expect(await errorOf(await refreshWith(apiUrl, next.refresh_token))).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant' },
    });
  });

  it('the revoke switch can be turned on at run time, and leaves other grants alone', async () => {
    await using running = await start();
    running.sandbox.control.setRevokeOnRefreshReuse(true);
    const reused = await connect(running, BAKKERIJ);
    const other = await connect(running, VASTGOED);
    await refreshWith(reused.apiUrl, reused.refresh_token);
    await refreshWith(reused.apiUrl, reused.refresh_token);
    expect((await usersMe(reused.apiUrl, reused.access_token)).status).toBe(401);
    expect((await usersMe(other.apiUrl, other.access_token)).status).toBe(200);
  });

  it("refuses a refresh token on another license's api_url with invalid_grant", async () => {
    await using running = await start();
    const { refresh_token } = await connect(running, BAKKERIJ);
    const response = await refreshWith(running.sandbox.apiUrl(VASTGOED.id), refresh_token);
    expect(await errorOf(response)).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant' },
    });
  });

  it('refuses an unknown refresh token with invalid_grant', async () => {
    await using running = await start();
    const { apiUrl } = await connect(running, BAKKERIJ);
    const response = await refreshWith(apiUrl, 'sbx_rt_made-up-made-up-made-up-made-up-made-up');
    expect(await errorOf(response)).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant' },
    });
  });

  it('keeps refresh tokens valid however much time passes', async () => {
    await using running = await start();
    const { apiUrl, refresh_token } = await connect(running, BAKKERIJ);
    running.sandbox.control.clock.advance(400 * 24 * 3600_000);
    expect((await refreshWith(apiUrl, refresh_token)).status).toBe(200);
  });
});
