import { describe, expect, it } from 'vitest';
import type { IssuedTokens } from './issued.ts';
import { ACCESS_TOKEN_TTL_S, DEV_CLIENT } from './state.ts';
import {
  BAKKERIJ,
  connect,
  get,
  LIBRAIRIE,
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

const grant = {
  id: 'g1',
  clientId: DEV_CLIENT.client_id,
  licenseId: BAKKERIJ.id,
  email: LOTTE.email,
  revoked: false,
};
/** A well-formed import of one grant and two tokens. */
const valid: IssuedTokens = {
  grants: [grant],
  accessTokens: [{ token: 'sbx_at_a', grant: 'g1', expiresAt: START }],
  refreshTokens: [{ token: 'sbx_rt_a', grant: 'g1', used: false }],
  secrets: ['sbx_at_a', 'sbx_rt_a'],
};

/** A connected license whose first pair was rotated once: one used and one unused refresh token. */
async function rotatedOnce(running: Awaited<ReturnType<typeof start>>) {
  const first = await connect(running, BAKKERIJ);
  const response = await refreshWith(first.apiUrl, first.refresh_token);
  expect(response.status).toBe(200);
  const second = (await response.json()) as { access_token: string; refresh_token: string };
  return { first, second };
}

describe('exportTokens', () => {
  it('lists each grant, its access tokens with their expiry, its refresh tokens used or not, and the secrets', async () => {
    await using running = await start();
    const { first, second } = await rotatedOnce(running);
    const exported = running.sandbox.control.exportTokens();

    expect(exported.grants).toEqual([
      {
        id: expect.any(String),
        clientId: DEV_CLIENT.client_id,
        licenseId: BAKKERIJ.id,
        email: LOTTE.email,
        revoked: false,
      },
    ]);
    const grant = exported.grants[0]!.id;
    const expiresAt = START + ACCESS_TOKEN_TTL_S * 1000;
    expect(exported.accessTokens).toEqual([
      { token: first.access_token, grant, expiresAt },
      { token: second.access_token, grant, expiresAt },
    ]);
    expect(exported.refreshTokens).toEqual([
      { token: first.refresh_token, grant, used: true },
      { token: second.refresh_token, grant, used: false },
    ]);
    expect(exported.secrets).toEqual(running.sandbox.control.secrets());
    expect(exported.secrets).toContain(second.refresh_token);
  });

  it('is JSON: what it gives survives a round trip through JSON unchanged', async () => {
    await using running = await start();
    await rotatedOnce(running);
    const exported = running.sandbox.control.exportTokens();
    expect(JSON.parse(JSON.stringify(exported))).toEqual(exported);
  });
});

describe('importTokens', () => {
  it('makes a fresh sandbox honour the tokens as the first did: access until expiry, each refresh token once', async () => {
    await using recorded = await start();
    const { first, second } = await rotatedOnce(recorded);
    const exported = JSON.parse(JSON.stringify(recorded.sandbox.control.exportTokens()));

    await using fresh = await start();
    const { control } = fresh.sandbox;
    expect(control.importTokens(exported)).toEqual({
      grants: 1,
      accessTokens: 2,
      refreshTokens: 2,
    });
    const apiUrl = fresh.sandbox.apiUrl(BAKKERIJ.id);
    expect((await usersMe(apiUrl, second.access_token)).status).toBe(200);
    // The used one is a reuse here too; the unused one rotates.
    expect((await refreshWith(apiUrl, first.refresh_token)).status).toBe(400);
    expect(control.counters().reuse_detected).toBe(1);
    expect((await refreshWith(apiUrl, second.refresh_token)).status).toBe(200);
    // Expiry is on the importing sandbox's clock.
    control.clock.advance(ACCESS_TOKEN_TTL_S * 1000);
    expect((await usersMe(apiUrl, second.access_token)).status).toBe(401);
    expect(control.secrets()).toEqual(expect.arrayContaining(exported.secrets));
  });

  it('keeps a grant whole: revoking it here stops every token imported with it', async () => {
    await using recorded = await start();
    const { second } = await rotatedOnce(recorded);
    await using fresh = await start();
    fresh.sandbox.control.importTokens(recorded.sandbox.control.exportTokens());
    expect(fresh.sandbox.control.revokeGrant(BAKKERIJ.id)).toBe(1);
    const apiUrl = fresh.sandbox.apiUrl(BAKKERIJ.id);
    expect((await usersMe(apiUrl, second.access_token)).status).toBe(401);
    expect((await refreshWith(apiUrl, second.refresh_token)).status).toBe(400);
  });

  it('keeps a revoked grant revoked', async () => {
    await using recorded = await start();
    const { second } = await rotatedOnce(recorded);
    recorded.sandbox.control.revokeGrant(BAKKERIJ.id);
    await using fresh = await start();
    fresh.sandbox.control.importTokens(recorded.sandbox.control.exportTokens());
    const apiUrl = fresh.sandbox.apiUrl(BAKKERIJ.id);
    expect((await usersMe(apiUrl, second.access_token)).status).toBe(401);
    expect((await refreshWith(apiUrl, second.refresh_token)).status).toBe(400);
  });

  it('adds to what the sandbox already issued', async () => {
    await using recorded = await start();
    const { second } = await rotatedOnce(recorded);
    await using fresh = await start();
    const own = await connect(fresh, LIBRAIRIE);
    fresh.sandbox.control.importTokens(recorded.sandbox.control.exportTokens());
    expect((await usersMe(own.apiUrl, own.access_token)).status).toBe(200);
    expect((await usersMe(fresh.sandbox.apiUrl(BAKKERIJ.id), second.access_token)).status).toBe(
      200,
    );
    expect(fresh.sandbox.control.exportTokens().grants).toHaveLength(2);
  });

  it.each([
    ['not an object', []],
    ['no grants', { ...valid, grants: undefined }],
    ['a grant of no license', { ...valid, grants: [{ ...grant, licenseId: 'lic-9999' }] }],
    ['a grant without revoked', { ...valid, grants: [{ ...grant, revoked: 'no' }] }],
    ['the same grant twice', { ...valid, grants: [grant, grant] }],
    [
      'a token of an unknown grant',
      { ...valid, accessTokens: [{ token: 'sbx_at_a', grant: 'g2', expiresAt: START }] },
    ],
    [
      'an access token without its prefix',
      { ...valid, accessTokens: [{ token: 'sbx_rt_a', grant: 'g1', expiresAt: START }] },
    ],
    [
      'an expiry that is not a number',
      { ...valid, accessTokens: [{ token: 'sbx_at_a', grant: 'g1', expiresAt: 'soon' }] },
    ],
    [
      'a refresh token without used',
      { ...valid, refreshTokens: [{ token: 'sbx_rt_a', grant: 'g1' }] },
    ],
    ['a secret that is not a string', { ...valid, secrets: [1] }],
  ])('refuses %s, and adds nothing', async (_what, input) => {
    await using fresh = await start();
    const { control } = fresh.sandbox;
    const before = control.exportTokens();
    expect(() => control.importTokens(input as IssuedTokens)).toThrow();
    expect(control.exportTokens()).toEqual(before);
  });

  it('refuses a grant it already knows', async () => {
    await using fresh = await start();
    fresh.sandbox.control.importTokens(valid);
    expect(() => fresh.sandbox.control.importTokens(valid)).toThrow(/already known/);
  });
});

describe('/_control/tokens', () => {
  it('GET exports and POST imports, over HTTP', async () => {
    await using recorded = await start({ control: true });
    const { second } = await rotatedOnce(recorded);
    const exported = await (await get(`${recorded.url}/_control/tokens`)).json();
    expect(exported).toEqual(recorded.sandbox.control.exportTokens());

    await using fresh = await start({ control: true });
    const imported = await postJson(`${fresh.url}/_control/tokens`, exported);
    expect(imported.status).toBe(200);
    expect(await imported.json()).toEqual({ grants: 1, accessTokens: 2, refreshTokens: 2 });
    expect((await usersMe(fresh.sandbox.apiUrl(BAKKERIJ.id), second.access_token)).status).toBe(
      200,
    );
  });

  it('POST answers 400 invalid_request to a malformed body', async () => {
    await using fresh = await start({ control: true });
    const response = await postJson(`${fresh.url}/_control/tokens`, { grants: 'all' });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('is 404 when control is not enabled', async () => {
    await using running = await start();
    expect((await get(`${running.url}/_control/tokens`)).status).toBe(404);
    expect((await postJson(`${running.url}/_control/tokens`, valid)).status).toBe(404);
  });
});
