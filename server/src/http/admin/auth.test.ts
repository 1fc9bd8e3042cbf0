import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startTestAdmin, type TestAdmin } from './test-server.ts';

let admin: TestAdmin;
beforeEach(async () => {
  admin = await startTestAdmin();
});
afterEach(() => admin.close());

const body = async (response: Response) => (await response.json()) as Record<string, unknown>;

describe('the admin API token gate', () => {
  it('answers a known token with who it is', async () => {
    const response = await admin.call('/api/v1/whoami');
    expect(response.status).toBe(200);
    expect(await body(response)).toEqual({ name: 'olivia', role: 'operator' });
    expect(await body(await admin.call('/api/v1/whoami', { token: admin.viewer }))).toEqual({
      name: 'victor',
      role: 'viewer',
    });
  });

  it('answers 401 unauthenticated with a Bearer challenge without a token, or with a wrong one', async () => {
    for (const token of [null, `${admin.operator.slice(0, -1)}x`, 'not a token']) {
      const response = await admin.call('/api/v1/overview', { token });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer realm="baton-admin"');
      expect(response.headers.get('cache-control')).toBe('no-store');
      expect(await body(response)).toEqual({
        error: 'unauthenticated',
        message: expect.any(String),
      });
    }
    expect(admin.useCases.calls).toEqual([]);
  });

  it('answers 403 forbidden, not 401, to a viewer asking an operator action', async () => {
    const response = await admin.call(`/api/v1/sessions/ses_${'A'.repeat(22)}/end`, {
      method: 'POST',
      token: admin.viewer,
    });
    expect(response.status).toBe(403);
    expect(response.headers.get('www-authenticate')).toBeNull();
    expect(await body(response)).toEqual({ error: 'forbidden', message: expect.any(String) });
    expect(admin.useCases.calls).toEqual([]);
  });

  it('answers 429 too_many_attempts with Retry-After after 10 failures a minute from one address', async () => {
    for (let i = 0; i < 10; i++)
      expect((await admin.call('/api/v1/overview', { token: `wrong${i}` })).status).toBe(401);
    const limited = await admin.call('/api/v1/overview', { token: 'wrong' });
    expect(limited.status).toBe(429);
    expect(await body(limited)).toEqual({
      error: 'too_many_attempts',
      message: expect.any(String),
    });
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    // Even the right token waits: guessing must not go on while the address is held back.
    expect((await admin.call('/api/v1/overview')).status).toBe(429);
    // Once that wait is over (on the injected clock), one more attempt is allowed.
    admin.clock.now += retryAfter * 1000;
    expect((await admin.call('/api/v1/overview')).status).toBe(200);
  });

  it('does not count successful calls, nor 403s, against the address', async () => {
    for (let i = 0; i < 30; i++) expect((await admin.call('/api/v1/whoami')).status).toBe(200);
    for (let i = 0; i < 15; i++)
      expect(
        (await admin.call('/api/v1/events/sweep', { method: 'POST', token: admin.viewer })).status,
      ).toBe(403);
    for (let i = 0; i < 9; i++)
      expect((await admin.call('/api/v1/whoami', { token: 'x' })).status).toBe(401);
    expect((await admin.call('/api/v1/whoami')).status).toBe(200);
  });

  it('logs every call with its actor, route template and status, never a token or a query', async () => {
    await admin.call('/api/v1/connections?connection=Q2Fuz3Jhdm9sdXRpb24xMA');
    await admin.call(`/api/v1/overview?secret=${admin.viewer}`, { token: admin.viewer });
    await admin.call('/api/v1/overview', { token: admin.viewer.slice(0, -2) });
    await admin.call('/api/v1/events/sweep', { method: 'POST', token: admin.viewer });
    const lines = admin.lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toEqual([
      expect.objectContaining({
        msg: 'admin call',
        actor: 'olivia',
        role: 'operator',
        method: 'GET',
        route: '/api/v1/connections',
        status: 200,
        target: 'Q2Fuz3Jhdm9sdXRpb24xMA',
      }),
      expect.objectContaining({ actor: 'victor', route: '/api/v1/overview', status: 400 }),
      expect.objectContaining({ actor: null, role: null, route: 'unmatched', status: 401 }),
      expect.objectContaining({ actor: 'victor', route: '/api/v1/events/sweep', status: 403 }),
    ]);
    const text = admin.lines.join('\n');
    for (const token of [admin.operator, admin.viewer, admin.viewer.slice(0, -2)])
      expect(text).not.toContain(token.slice(7));
  });
});
