import { routes } from '@baton/shared';
import { describe, expect, it } from 'vitest';
import { EXTENSION_REDIRECT, useWorld } from '../support/world.ts';

const world = useWorld({}, { resetSandbox: true, expectNoLeaks: true });

const page = async (path: string, headers: Record<string, string> = {}) => {
  const response = await fetch(new URL(path, world.broker.url), { headers, redirect: 'manual' });
  const body = await response.text();
  return { status: response.status, lang: /<html lang="([a-z]+)">/.exec(body)?.[1], body };
};
const start = (params: Record<string, string>) =>
  `${routes.authStart}?${new URLSearchParams({
    redirect_uri: EXTENSION_REDIRECT,
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
    ...params,
  })}`;

describe("the authorization window's pages speak the user's language", () => {
  it('the language the sign-in was started in', async () => {
    const nl = await page(start({ locale: 'nl', code_challenge: 'short' }));
    expect(nl).toMatchObject({ status: 400, lang: 'nl' });
    expect(nl.body).toContain('De parameter &quot;code_challenge&quot; ontbreekt');
    const fr = await page(start({ locale: 'fr', redirect_uri: 'https://evil.test/' }), {
      'accept-language': 'nl-BE',
    });
    expect(fr).toMatchObject({ status: 400, lang: 'fr' });
    expect(fr.body).toContain('&quot;redirect_uri&quot;');
  });

  it("else the browser's (Accept-Language), else English", async () => {
    const fr = await page(`${routes.authCallback}?code=x&state=y`, {
      'accept-language': 'fr-BE,fr;q=0.9,en;q=0.5',
    });
    expect(fr).toMatchObject({ status: 400, lang: 'fr' });
    expect(fr.body).toContain('Aucune connexion n&#39;est en cours dans ce navigateur.');
    const nl = await page(`${routes.authCallback}?code=x`, { 'accept-language': 'nl-BE' });
    expect(nl.lang).toBe('nl');
    expect((await page(`${routes.authCallback}?code=x`, { 'accept-language': 'de-DE' })).lang).toBe(
      'en',
    );
  });

  it('says the store is unavailable in that language too', async () => {
    await world.redis.stop();
    try {
      const nl = await page(start({ locale: 'nl' }));
      expect(nl).toMatchObject({ status: 503, lang: 'nl' });
      expect(nl.body).toContain('Baton is niet beschikbaar');
    } finally {
      await world.redis.start();
    }
  });
});
