import { describe, expect, it } from 'vitest';
import { hostPermissionFor } from '../broker-url.ts';
import { BROKER, SESSION_TOKEN as TOKEN, signedIn } from '../testing/harness.ts';

describe('settings', () => {
  it('settings.get gives the broker, the default, the language and the redirect URL', async () => {
    const h = await signedIn();

    expect(await h.send['settings.get'](null)).toEqual({
      brokerUrl: BROKER,
      defaultBrokerUrl: BROKER,
      locale: 'fr',
      managed: { brokerUrl: false, locale: false },
      redirectUrl: 'https://abcdefghijklmnopabcdefghijklmnop.chromiumapp.org/',
      hostPermissionGranted: true,
    });
  });

  it('settings.save rejects an invalid broker URL and keeps the old one', async () => {
    const h = await signedIn();

    const result = await h.send['settings.save']({ brokerUrl: 'http://broker.example.com' });

    expect(result).toEqual({ ok: false, problem: 'insecure' });
    expect((await h.state.read()).settings.brokerUrl).toBeNull();
  });

  it('settings.save refuses a broker whose host permission was not granted', async () => {
    const h = await signedIn();

    const result = await h.send['settings.save']({ brokerUrl: 'https://broker.example.com' });

    expect(result).toEqual({ ok: false, problem: 'permission_missing' });
  });

  it('settings.save switches broker: the old session is not sent there, and the list empties', async () => {
    const h = await signedIn();
    await h.send['view.refresh'](null);
    h.granted.add(hostPermissionFor('https://broker.example.com'));

    const result = await h.send['settings.save']({ brokerUrl: ' https://broker.example.com/ ' });
    await h.background.idle();

    expect(result).toMatchObject({
      ok: true,
      settings: { brokerUrl: 'https://broker.example.com' },
    });
    const view = await h.view();
    expect(view).toMatchObject({
      brokerUrl: 'https://broker.example.com',
      signedIn: false,
      connections: [],
    });
    expect(h.broker.requests.some((r) => r.url.startsWith('https://broker.example.com'))).toBe(
      false,
    );
    // The token stays bound to its own broker, for when the user switches back.
    expect((await h.state.read()).session).toEqual({ sessionToken: TOKEN, brokerUrl: BROKER });
  });

  it('settings.save with brokerUrl null returns to the build broker', async () => {
    const h = await signedIn();
    h.granted.add(hostPermissionFor('https://broker.example.com'));
    await h.send['settings.save']({ brokerUrl: 'https://broker.example.com' });

    const result = await h.send['settings.save']({ brokerUrl: null });
    await h.background.idle();

    expect(result).toMatchObject({ ok: true, settings: { brokerUrl: BROKER } });
    expect((await h.state.read()).settings.brokerUrl).toBeNull();
    expect((await h.view()).signedIn).toBe(true);
  });

  it('settings.save stores the default language alone', async () => {
    const h = await signedIn();

    await h.send['settings.save']({ locale: 'nl' });

    expect((await h.state.read()).settings).toEqual({ brokerUrl: null, locale: 'nl' });
    expect((await h.view()).locale).toBe('nl');
  });
});
