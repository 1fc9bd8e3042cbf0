import { describe, expect, it } from 'vitest';
import { createHarness, LICENSE_A } from '../testing/harness.ts';

/**
 * The language of the sign-in pages: an English browser falls back to Dutch (locale.ts); a user
 * who picks French in the popup and signs in gets French offered first from then on, until they
 * set a default on the options page. The organisation's language wins over both.
 */
describe('the language offered first for the sign-in pages', () => {
  it('is the one the user last signed in with, also after the sign-in failed', async () => {
    const h = await createHarness();
    expect((await h.view()).locale).toBeNull();

    h.identity.redirectError('access_denied');
    await h.send['flow.start']({ locale: 'fr', reconnectId: null });
    await h.background.idle();

    expect((await h.view()).locale).toBe('fr');
    expect((await h.state.read()).lastSignInLocale).toBe('fr');
    expect(h.identity.launched[0]?.searchParams.get('locale')).toBe('fr');
  });

  it('gives way to a default set on the options page afterwards', async () => {
    const h = await createHarness();
    h.identity.grant(h.broker, LICENSE_A);
    await h.send['flow.start']({ locale: 'fr', reconnectId: null });
    await h.background.idle();

    await h.send['settings.save']({ locale: 'nl' });

    expect((await h.view()).locale).toBe('nl');
    expect((await h.state.read()).lastSignInLocale).toBeNull();
  });

  it('is the organisation’s when its policy sets one', async () => {
    const h = await createHarness({ managed: { locale: 'nl' } });
    h.identity.grant(h.broker, LICENSE_A);
    await h.send['flow.start']({ locale: 'fr', reconnectId: null });
    await h.background.idle();

    expect((await h.view()).locale).toBe('nl');
  });
});
