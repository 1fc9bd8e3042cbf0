import { redirectCheckResponseSchema, routes } from '@baton/shared';
import { describe, expect, it } from 'vitest';
import { EXTENSION_REDIRECT, useWorld } from '../support/world.ts';

const world = useWorld({}, { resetSandbox: true, expectNoLeaks: true });

const check = (redirectUri?: string) =>
  fetch(
    new URL(
      `${routes.redirectCheck}${redirectUri === undefined ? '' : `?${new URLSearchParams({ redirect_uri: redirectUri })}`}`,
      world.broker.url,
    ),
  );

describe('GET /auth/redirect-check', () => {
  it('says yes for an allowed extension redirect URL, no for any other, and nothing else', async () => {
    const allowed = await check(EXTENSION_REDIRECT);
    expect(allowed.status).toBe(200);
    expect(allowed.headers.get('cache-control')).toBe('no-store');
    expect(redirectCheckResponseSchema.strict().parse(await allowed.json())).toEqual({
      allowed: true,
    });
    for (const other of [`${EXTENSION_REDIRECT}x`, 'https://evil.test/', ''])
      expect(await (await check(other)).json()).toEqual({ allowed: false });
    expect(await (await check()).json()).toEqual({ allowed: false });
    // No session is made for it.
    expect(allowed.headers.get('set-cookie')).toBeNull();
  });

  it('is rate limited with the other /auth routes', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 70; i++) statuses.push((await check(EXTENSION_REDIRECT)).status);
    expect(statuses.filter((status) => status === 429).length).toBeGreaterThan(0);
  });
});
