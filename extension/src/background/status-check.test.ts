import { fakeBrowser } from 'wxt/testing/fake-browser';
import { describe, expect, it } from 'vitest';
import { NOT_MANAGED } from '../managed.ts';
import { errorResponse } from '../testing/fake-broker.ts';
import {
  BROKER,
  connect,
  createHarness,
  LICENSE_A,
  SESSION_TOKEN,
  signedIn,
  T0,
} from '../testing/harness.ts';
import {
  nextCheckDelayMs,
  shouldSchedule,
  STATUS_CHECK_ALARM,
  statusCheckMinutes,
} from './status-check.ts';

const MINUTE = 60_000;
const TOKEN = SESSION_TOKEN;

/** Draws in turn from `values`, then the last one again. */
const draws = (...values: number[]) => {
  let i = 0;
  return () => values[Math.min(i++, values.length - 1)] ?? 0.5;
};

describe('nextCheckDelayMs (the period with ±20 % jitter)', () => {
  it.each([
    [0, 24 * MINUTE],
    [0.25, 27 * MINUTE],
    [0.5, 30 * MINUTE],
    [0.75, 33 * MINUTE],
  ])('random %f: %i ms', (random, expected) => {
    expect(nextCheckDelayMs(30, random)).toBe(expected);
  });

  it('stays within [0.8, 1.2) of the period for any draw of Math.random', () => {
    for (const minutes of [1, 30, 1440]) {
      for (let i = 0; i < 1000; i++) {
        const delay = nextCheckDelayMs(minutes, Math.random());
        expect(delay).toBeGreaterThanOrEqual(0.8 * minutes * MINUTE);
        expect(delay).toBeLessThanOrEqual(1.2 * minutes * MINUTE);
      }
    }
    expect(nextCheckDelayMs(30, 1 - Number.EPSILON)).toBeLessThanOrEqual(36 * MINUTE);
  });
});

describe('the period in force, and whether to schedule', () => {
  it.each([
    ['no policy: every 30 minutes', null, 30],
    ['a policy of an hour', 60, 60],
    ['a policy of 0: off', 0, null],
  ])('%s', (_label, set, expected) => {
    expect(statusCheckMinutes({ ...NOT_MANAGED, statusCheckMinutes: set })).toBe(expected);
  });

  it.each([
    [true, 30, { schedule: true, reason: 'signed_in' }],
    [false, 30, { schedule: false, reason: 'signed_out' }],
    [true, null, { schedule: false, reason: 'policy_off' }],
    [false, null, { schedule: false, reason: 'signed_out' }],
  ])('signed in %s, period %s: %o', (signed, minutes, expected) => {
    expect(shouldSchedule(signed, minutes)).toEqual(expected);
  });
});

describe('the status check’s alarm', () => {
  it('is set while a session exists, at the period with jitter, repeating at the period', async () => {
    const h = await signedIn();

    expect(await h.checkAlarm()).toEqual(
      expect.objectContaining({
        name: STATUS_CHECK_ALARM,
        scheduledTime: T0 + 30 * MINUTE,
        periodInMinutes: 30,
      }),
    );
  });

  it.each([
    ['24 minutes', 0, T0 + 24 * MINUTE],
    ['35.988 minutes', 0.999, T0 + 35.988 * MINUTE],
  ])(
    'is set %s after a sign-in for a draw of %f (near the bounds)',
    async (_in, random, expected) => {
      const h = await createHarness({ random: () => random });
      h.broker.seedSession(TOKEN, [LICENSE_A]);
      h.identity.grant(h.broker, LICENSE_A);

      await connect(h);

      expect((await h.checkAlarm())?.scheduledTime).toBe(expected);
    },
  );

  it('is not set while signed out; set by a sign-in; cleared by a sign-out', async () => {
    const h = await createHarness();
    expect(await h.checkAlarm()).toBeUndefined();

    h.identity.grant(h.broker, LICENSE_A);
    await connect(h);
    expect(await h.checkAlarm()).toMatchObject({ periodInMinutes: 30 });

    await h.send['session.signOut'](null);
    expect(await h.checkAlarm()).toBeUndefined();
    expect(h.events).toContainEqual(['check.cleared', { reason: 'signed_out' }]);
  });

  it('is cleared when the broker ends the session', async () => {
    const h = await signedIn();
    h.broker.fail('GET', '/connections', () => errorResponse('invalid_session'));

    await h.send['view.refresh'](null);

    expect(await h.view()).toMatchObject({ signedIn: false });
    expect(await h.checkAlarm()).toBeUndefined();
  });

  it('is never set when the organisation turned the check off, even with a session', async () => {
    const h = await createHarness({
      managed: { statusCheckMinutes: 0 },
      seed: () =>
        fakeBrowser.storage.local.set({
          state: {
            settings: { brokerUrl: null, locale: null },
            session: { sessionToken: TOKEN, brokerUrl: BROKER },
          },
          state$: { v: 2 },
        }),
    });
    h.broker.seedSession(TOKEN, [LICENSE_A]);
    await h.send['view.refresh'](null);

    expect(await h.view()).toMatchObject({ signedIn: true });
    expect(await h.checkAlarm()).toBeUndefined();
    expect(h.events.map(([event]) => event)).not.toContain('check.scheduled');
  });

  it('is cleared by a worker that starts under a policy that turned the check off', async () => {
    const h = await signedIn();
    expect(await h.checkAlarm()).toBeDefined();

    const off = await createHarness({ restart: true, managed: { statusCheckMinutes: 0 } });

    expect(await off.checkAlarm()).toBeUndefined();
    expect(off.events).toContainEqual(['check.cleared', { reason: 'policy_off' }]);
  });

  it('follows a policy changed while the browser runs: another period, then off, then on', async () => {
    const h = await signedIn();

    h.policy.value = { statusCheckMinutes: 120 };
    await h.policy.changed();
    expect(await h.checkAlarm()).toMatchObject({
      scheduledTime: T0 + 120 * MINUTE,
      periodInMinutes: 120,
    });

    h.policy.value = { statusCheckMinutes: 0 };
    await h.policy.changed();
    expect(await h.checkAlarm()).toBeUndefined();

    h.policy.value = {};
    await h.policy.changed();
    expect(await h.checkAlarm()).toMatchObject({ periodInMinutes: 30 });
  });

  it('is left where it is by a worker that starts again (it would never come otherwise)', async () => {
    const first = await signedIn();
    const before = await first.checkAlarm();

    const restarted = await createHarness({ restart: true, random: () => 0 });

    expect(before?.scheduledTime).toBe(T0 + 30 * MINUTE);
    expect(await restarted.checkAlarm()).toEqual(before);
  });
});

describe('when the status check’s alarm fires', () => {
  it('reloads the licences as the popup’s refresh does, and sets the next check with fresh jitter', async () => {
    const h = await createHarness({ random: draws(0.5, 0) });
    h.identity.grant(h.broker, LICENSE_A);
    await connect(h);
    h.broker.requests.length = 0;

    await h.fireCheck();

    expect(h.broker.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /connections',
      'GET /connections/conn-a/api/users.me',
    ]);
    // Fired at T0 + 30 min; the next one 24 minutes later (a draw of 0).
    expect(await h.checkAlarm()).toMatchObject({
      scheduledTime: T0 + 54 * MINUTE,
      periodInMinutes: 30,
    });
    expect(h.events).toContainEqual(['check.run', undefined]);
  });

  it('shows a licence the provider no longer accepts on the badge, without the popup', async () => {
    const h = await signedIn();
    h.broker.disconnect(TOKEN, 'conn-a', 'refresh_rejected');

    await h.fireCheck();

    expect(await h.badge()).toMatchObject({
      text: '!',
      title: 'Baton: a licence needs reconnecting',
    });
  });

  it('shares one broker round with a refresh the popup started', async () => {
    const h = await signedIn();
    const held = h.broker.hold('GET', '/connections');
    const popup = h.send['view.refresh'](null);
    await held.reached;

    const check = h.fireCheck();
    held.release();
    await Promise.all([popup, check]);

    expect(h.broker.requestsTo('GET', '/connections')).toHaveLength(1);
  });

  it('asks the broker nothing, and clears the alarm, once the session is gone', async () => {
    const h = await signedIn();
    const alarm = await h.checkAlarm();
    await h.send['session.signOut'](null);
    h.broker.requests.length = 0;

    // An alarm the browser fired as the sign-out cleared it.
    await fakeBrowser.alarms.onAlarm.trigger({ ...alarm!, name: STATUS_CHECK_ALARM });
    await h.background.idle();

    expect(h.broker.requests).toHaveLength(0);
    expect(await h.checkAlarm()).toBeUndefined();
  });

  it('asks the broker nothing when the organisation turned the check off meanwhile', async () => {
    const h = await signedIn();
    const alarm = await h.checkAlarm();
    h.policy.value = { statusCheckMinutes: 0 };
    await h.policy.changed();

    await fakeBrowser.alarms.onAlarm.trigger({ ...alarm!, name: STATUS_CHECK_ALARM });
    await h.background.idle();

    expect(h.broker.requests).toHaveLength(0);
    expect(await h.checkAlarm()).toBeUndefined();
  });

  it('ignores another alarm', async () => {
    const h = await signedIn();

    await fakeBrowser.alarms.onAlarm.trigger({ name: 'someone-else', scheduledTime: T0 });
    await h.background.idle();

    expect(h.broker.requests).toHaveLength(0);
  });
});
