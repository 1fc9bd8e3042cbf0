import { describe, expect, it } from 'vitest';
import {
  BAKKERIJ,
  connect,
  ELODIE,
  get,
  LIBRAIRIE,
  LOTTE,
  refreshWith,
  start,
  usersMe,
  VASTGOED,
} from './testing.ts';

const INVALID_TOKEN = 'Bearer error="invalid_token"';

async function unauthorized(response: Response) {
  return {
    status: response.status,
    challenge: response.headers.get('www-authenticate'),
    body: (await response.json()) as unknown,
  };
}

describe('GET {api_url}/users.me', () => {
  it('answers the user record, with the license of the api_url', async () => {
    await using running = await start();
    const { apiUrl, access_token } = await connect(running, VASTGOED);
    const response = await usersMe(apiUrl, access_token);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      id: LOTTE.id,
      name: 'Lotte Vermeulen',
      email: LOTTE.email,
      language: 'nl',
      license: {
        id: VASTGOED.id,
        name: 'Vermeulen & Zonen Vastgoed',
        plan: VASTGOED.plan,
        seats: VASTGOED.seats,
        valid_until: VASTGOED.validUntil,
      },
    });
  });

  it('answers in the language of the account', async () => {
    await using running = await start();
    const { apiUrl, access_token } = await connect(running, LIBRAIRIE);
    const body = (await (await usersMe(apiUrl, access_token)).json()) as Record<string, unknown>;
    expect(body).toMatchObject({ email: ELODIE.email, language: 'fr' });
  });

  it('accepts an access token until 3600 s after issue', async () => {
    await using running = await start();
    const { apiUrl, access_token } = await connect(running, BAKKERIJ);
    running.sandbox.control.clock.advance(3_599_999);
    expect((await usersMe(apiUrl, access_token)).status).toBe(200);
  });

  it('answers 401 invalid_token once the access token is 3600 s old', async () => {
    await using running = await start();
    const { apiUrl, access_token } = await connect(running, BAKKERIJ);
    running.sandbox.control.clock.advance(3_600_000);
    expect(await unauthorized(await usersMe(apiUrl, access_token))).toEqual({
      status: 401,
      challenge: INVALID_TOKEN,
      body: { error: 'invalid_token', error_description: 'The access token expired.' },
    });
  });

  it('answers 401 invalid_token for an unknown token', async () => {
    await using running = await start();
    const { apiUrl } = await connect(running, BAKKERIJ);
    const response = await usersMe(apiUrl, 'sbx_at_made-up-made-up-made-up-made-up-made-up');
    expect(await unauthorized(response)).toMatchObject({ status: 401, challenge: INVALID_TOKEN });
  });

  it('answers 401 invalid_token for a token of another license, which works on its own api_url', async () => {
    await using running = await start();
    const { apiUrl, access_token } = await connect(running, BAKKERIJ);
    const other = running.sandbox.apiUrl(VASTGOED.id);
    expect((await usersMe(apiUrl, access_token)).status).toBe(200);
    expect(await unauthorized(await usersMe(other, access_token))).toEqual({
      status: 401,
      challenge: INVALID_TOKEN,
      body: {
        error: 'invalid_token',
        error_description: 'The access token belongs to another license.',
      },
    });
  });

  it('answers 401 invalid_token for a revoked token', async () => {
    await using running = await start();
    const { apiUrl, access_token } = await connect(running, BAKKERIJ);
    running.sandbox.control.revokeGrant({ licenseId: BAKKERIJ.id });
    expect(await unauthorized(await usersMe(apiUrl, access_token))).toEqual({
      status: 401,
      challenge: INVALID_TOKEN,
      body: { error: 'invalid_token', error_description: 'The access token was revoked.' },
    });
  });

  it('answers 401 without a Bearer token', async () => {
    await using running = await start();
    const response = await get(`${running.sandbox.apiUrl(BAKKERIJ.id)}/users.me`);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('answers unknown paths under an api_url with 404 JSON', async () => {
    await using running = await start();
    const { apiUrl, access_token } = await connect(running, BAKKERIJ);
    const response = await get(`${apiUrl}/invoices`, {
      headers: { authorization: `Bearer ${access_token}` },
    });
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ error: 'not_found' });
  });
});

describe('revocation by the user', () => {
  it("revoking a license's grant stops its access and refresh tokens, and no other license's", async () => {
    await using running = await start();
    const revoked = await connect(running, BAKKERIJ);
    const kept = await connect(running, VASTGOED);
    expect(running.sandbox.control.revokeGrant({ licenseId: BAKKERIJ.id })).toBe(1);
    expect((await usersMe(revoked.apiUrl, revoked.access_token)).status).toBe(401);
    expect((await refreshWith(revoked.apiUrl, revoked.refresh_token)).status).toBe(400);
    expect((await usersMe(kept.apiUrl, kept.access_token)).status).toBe(200);
    expect((await refreshWith(kept.apiUrl, kept.refresh_token)).status).toBe(200);
  });

  it('revokeGrant also takes a bare license id', async () => {
    await using running = await start();
    const { apiUrl, refresh_token } = await connect(running, BAKKERIJ);
    expect(running.sandbox.control.revokeGrant(BAKKERIJ.id)).toBe(1);
    expect((await refreshWith(apiUrl, refresh_token)).status).toBe(400);
  });

  it('revoking by account stops every grant of that account only', async () => {
    await using running = await start();
    const first = await connect(running, BAKKERIJ);
    const second = await connect(running, VASTGOED);
    const elodie = await connect(running, LIBRAIRIE);
    expect(running.sandbox.control.revokeGrant({ email: LOTTE.email })).toBe(2);
    expect((await refreshWith(first.apiUrl, first.refresh_token)).status).toBe(400);
    expect((await refreshWith(second.apiUrl, second.refresh_token)).status).toBe(400);
    expect((await usersMe(elodie.apiUrl, elodie.access_token)).status).toBe(200);
  });

  it('expiring the access tokens of a license answers 401 for them, while refresh still works', async () => {
    await using running = await start();
    const { apiUrl, access_token, refresh_token } = await connect(running, BAKKERIJ);
    expect(running.sandbox.control.expireAccessTokens(BAKKERIJ.id)).toBe(1);
    expect((await usersMe(apiUrl, access_token)).status).toBe(401);
    expect((await refreshWith(apiUrl, refresh_token)).status).toBe(200);
  });
});

describe('ANY {api_url}/echo/{*rest} (control enabled)', () => {
  it('echoes method, path, query, headers and body to a valid Bearer', async () => {
    await using running = await start({ control: true });
    const { apiUrl, access_token } = await connect(running, BAKKERIJ);
    const response = await fetch(`${apiUrl}/echo/a/b%20c?x=1&y=%2F`, {
      method: 'PATCH',
      headers: {
        authorization: `Bearer ${access_token}`,
        'content-type': 'application/json',
        'x-custom': 'yes',
      },
      body: '{"hello":"wereld"}',
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      method: 'PATCH',
      path: `/licenses/${BAKKERIJ.id}/echo/a/b%20c`,
      query: 'x=1&y=%2F',
      headers: { 'x-custom': 'yes', authorization: `Bearer ${access_token}` },
      body: '{"hello":"wereld"}',
    });
  });

  it('requires a valid Bearer like users.me', async () => {
    await using running = await start({ control: true });
    const response = await fetch(`${running.sandbox.apiUrl(BAKKERIJ.id)}/echo/x`, {
      headers: { authorization: 'Bearer sbx_at_unknown-unknown-unknown-unknown-unknown' },
    });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(INVALID_TOKEN);
  });

  it('does not exist without control', async () => {
    await using running = await start();
    const { apiUrl, access_token } = await connect(running, BAKKERIJ);
    const response = await usersMe(apiUrl, access_token);
    const echo = await get(`${apiUrl}/echo/x`, {
      headers: { authorization: `Bearer ${access_token}` },
    });
    expect(response.status).toBe(200);
    expect(echo.status).toBe(404);
  });
});
