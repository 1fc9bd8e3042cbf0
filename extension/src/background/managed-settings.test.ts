import { fakeBrowser } from 'wxt/testing/fake-browser';
import { describe, expect, it } from 'vitest';
import { hostPermissionFor } from '../broker-url.ts';
import { BROKER, createHarness, LICENSE_A } from '../testing/harness.ts';

const ORG = 'https://baton.org.example.be';
const MINE = 'https://mine.example.be';
const TOKEN = 'session-token-1';

/** The user had chosen their own broker and language on the options page, and signed in there. */
const userSettings = () =>
  fakeBrowser.storage.local.set({
    state: {
      settings: { brokerUrl: MINE, locale: 'fr' },
      session: { sessionToken: TOKEN, brokerUrl: MINE },
    },
    state$: { v: 2 },
  });

const granted = [hostPermissionFor(BROKER), hostPermissionFor(ORG), hostPermissionFor(MINE)];

describe('settings the organisation sets (storage.managed)', () => {
  it('win over the user’s from the first read: view, options page and the flow', async () => {
    const h = await createHarness({
      seed: userSettings,
      granted,
      managed: { brokerUrl: `${BROKER}/`, locale: 'nl' },
    });

    expect(await h.view()).toMatchObject({ brokerUrl: BROKER, locale: 'nl', signedIn: false });
    expect(await h.send['settings.get'](null)).toMatchObject({
      brokerUrl: BROKER,
      locale: 'nl',
      managed: { brokerUrl: true, locale: true },
    });

    h.identity.grant(h.broker, LICENSE_A);
    await h.send['flow.start']({ locale: 'nl', reconnectId: null });
    await h.background.idle();

    expect(h.identity.launched[0]?.origin).toBe(new URL(BROKER).origin);
    expect((await h.view()).connections.map((c) => c.id)).toEqual([LICENSE_A.connectionId]);
    // The user's session belongs to their own broker: it is never sent to the organisation's.
    expect(JSON.stringify(h.broker.requests)).not.toContain(TOKEN);
    expect((await h.state.read()).settings).toEqual({ brokerUrl: MINE, locale: 'fr' });
  });

  it('cannot be changed on the options page; what is not managed still can', async () => {
    const h = await createHarness({ seed: userSettings, granted, managed: { locale: 'nl' } });

    expect(await h.send['settings.save']({ locale: 'fr' })).toEqual({
      ok: false,
      problem: 'managed',
    });
    const saved = await h.send['settings.save']({ brokerUrl: BROKER });
    expect(saved).toMatchObject({ ok: true, settings: { brokerUrl: BROKER, locale: 'nl' } });
    expect((await h.state.read()).settings).toEqual({ brokerUrl: null, locale: 'fr' });
    expect(h.events).toContainEqual(['settings.refused', { reason: 'managed' }]);
  });

  it('an invalid policy value is ignored and logged, not trusted', async () => {
    const h = await createHarness({
      seed: userSettings,
      granted,
      managed: { brokerUrl: 'http://baton.org.example.be', locale: 'de' },
    });

    expect(await h.view()).toMatchObject({ brokerUrl: MINE, locale: 'fr', signedIn: true });
    expect(h.events).toContainEqual(['managed.ignored', { key: 'brokerUrl' }]);
    expect(h.events).toContainEqual(['managed.ignored', { key: 'locale' }]);
  });

  it('no policy at all (Firefox rejects the read) is nothing managed', async () => {
    const h = await createHarness({
      seed: userSettings,
      granted,
      managed: new Error('Managed storage manifest not found'),
    });

    expect(await h.send['settings.get'](null)).toMatchObject({
      brokerUrl: MINE,
      managed: { brokerUrl: false, locale: false },
    });
  });

  it('a policy set while the browser runs switches the broker and drops the old list', async () => {
    const h = await createHarness({
      granted,
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
    expect((await h.view()).connections).toHaveLength(1);

    h.policy.value = { brokerUrl: ORG };
    await h.policy.changed();

    expect(await h.view()).toMatchObject({ brokerUrl: ORG, signedIn: false, connections: [] });
    expect(h.events).toContainEqual(['managed.changed', { broker_changed: true }]);

    h.policy.value = {};
    await h.policy.changed();
    expect(await h.view()).toMatchObject({ brokerUrl: BROKER, signedIn: true });
  });
});
