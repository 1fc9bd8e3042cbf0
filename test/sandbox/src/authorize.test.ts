import { describe, expect, it } from 'vitest';
import { DEV_CLIENT } from './state.ts';
import {
  authorizeUrl,
  BAKKERIJ,
  callbackParams,
  clickThrough,
  devRequest,
  ELODIE,
  get,
  LIBRAIRIE,
  LOTTE,
  postForm,
  REDIRECT_URI,
  start,
  transactionOf,
  VASTGOED,
} from './testing.ts';

const CODE = /^sbx_code_[A-Za-z0-9_-]{32,}$/;

describe('GET /{locale}/api/oauth2/authorize', () => {
  it.each([
    ['nl', 'Aanmelden', 'Wachtwoord'],
    ['fr', 'Connexion', 'Mot de passe'],
  ])('under /%s/ shows a login page in that language', async (locale, title, password) => {
    await using running = await start();
    const response = await get(authorizeUrl(running, devRequest(), locale));
    const page = await response.text();
    expect(response.status).toBe(200);
    expect(page).toContain(`<html lang="${locale}">`);
    expect(page).toContain(`<title>${title}</title>`);
    expect(page).toContain(`<label for="password">${password}</label>`);
    expect(page).toMatch(/<input[^>]+id="email"/);
    expect(page).toMatch(/<button[^>]+id="login"/);
  });

  it.each(['en', 'de', 'FR', 'Nl', 'fr-BE'])(
    'under /%s/ answers 404, as no such page exists',
    async (locale) => {
      await using running = await start();
      const response = await get(authorizeUrl(running, devRequest(), locale));
      expect(response.status).toBe(404);
      expect(response.headers.get('location')).toBeNull();
    },
  );

  it('answers an error page for an unknown client_id, and never redirects', async () => {
    await using running = await start();
    const response = await get(authorizeUrl(running, devRequest({ client_id: 'someone-else' })));
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
    expect(await response.text()).toContain('Deze toepassing is niet bekend');
  });

  it.each([
    ['another path', 'http://127.0.0.1:8787/auth/other'],
    ['a trailing slash', `${REDIRECT_URI}/`],
    ['another port', 'http://127.0.0.1:8788/auth/callback'],
    ['localhost for 127.0.0.1', 'http://localhost:8787/auth/callback'],
    ['an added query', `${REDIRECT_URI}?x=1`],
    ['another case', 'http://127.0.0.1:8787/auth/Callback'],
  ])(
    'answers an error page for a redirect_uri with %s, and never redirects',
    async (_, redirectUri) => {
      await using running = await start();
      const response = await get(authorizeUrl(running, devRequest({ redirect_uri: redirectUri })));
      expect(response.status).toBe(400);
      expect(response.headers.get('location')).toBeNull();
      expect(await response.text()).toContain('redirect_uri');
    },
  );

  it.each([
    ['a response_type other than code', devRequest({ response_type: 'token' }), 'response_type'],
    ['no response_type', { client_id: 'baton-dev', redirect_uri: REDIRECT_URI }, 'response_type'],
    ['no client_id', { response_type: 'code', redirect_uri: REDIRECT_URI }, 'client_id'],
    ['no redirect_uri', { client_id: 'baton-dev', response_type: 'code' }, 'redirect_uri'],
  ])('answers an error page for %s', async (_, params, named) => {
    await using running = await start();
    const response = await get(authorizeUrl(running, params));
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
    expect(await response.text()).toContain(named);
  });

  it('answers an error page when a parameter appears twice', async () => {
    await using running = await start();
    const url = `${authorizeUrl(running, devRequest())}&redirect_uri=${encodeURIComponent(REDIRECT_URI)}`;
    const response = await get(url);
    expect(response.status).toBe(400);
    expect(await response.text()).toContain('komt meer dan één keer voor');
  });
});

describe('POST /{locale}/api/oauth2/authorize/login', () => {
  const login = async (email: string, password: string, locale = 'nl') => {
    const running = await start();
    const first = await get(authorizeUrl(running, devRequest(), locale));
    const transaction = transactionOf(await first.text());
    const url = `${running.url}/${locale}/api/oauth2/authorize/login`;
    const response = await postForm(url, { transaction, email, password });
    const page = await response.text();
    return { response, page, [Symbol.asyncDispose]: () => running.close() };
  };

  it('with a wrong password, shows the login page again with an error and does not redirect', async () => {
    await using flow = await login(LOTTE.email, 'not-the-password');
    const { response, page } = flow;
    expect(response.status).toBe(200);
    expect(response.headers.get('location')).toBeNull();
    expect(page).toContain('Onjuist e-mailadres of wachtwoord.');
    expect(page).toMatch(/<input[^>]+id="password"/);
    expect(page).toContain(`value="${LOTTE.email}"`);
  });

  it('with an unknown email, shows the same error', async () => {
    await using flow = await login('nobody@example.be', LOTTE.password, 'fr');
    const { page } = flow;
    expect(page).toContain('Adresse e-mail ou mot de passe incorrect.');
  });

  it('escapes what the user typed when it shows it again', async () => {
    await using flow = await login('"><script>alert(1)</script>', 'x');
    const { page } = flow;
    expect(page).not.toContain('<script>');
    expect(page).toContain('value="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"');
  });

  it('with the right password, shows a picker listing every license of the account', async () => {
    await using flow = await login(LOTTE.email, LOTTE.password);
    const { response, page } = flow;
    expect(response.status).toBe(200);
    expect(page).toContain('Kies een licentie');
    expect(page).toContain(`name="license" value="${BAKKERIJ.id}"`);
    expect(page).toContain(`name="license" value="${VASTGOED.id}"`);
    expect(page).toContain('Vermeulen &amp; Zonen Vastgoed');
    expect(page).not.toContain(LIBRAIRIE.id);
  });

  it('with an unknown transaction, answers an error page', async () => {
    await using running = await start();
    const response = await postForm(`${running.url}/nl/api/oauth2/authorize/login`, {
      transaction: 'made-up',
      email: LOTTE.email,
      password: LOTTE.password,
    });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain('Deze aanvraag is verlopen');
  });
});

describe('POST /{locale}/api/oauth2/authorize/license', () => {
  const pick = async (license: string | undefined) => {
    const running = await start();
    const first = await get(authorizeUrl(running, devRequest(), 'fr'));
    const transaction = transactionOf(await first.text());
    const base = `${running.url}/fr/api/oauth2/authorize`;
    await postForm(`${base}/login`, { transaction, email: LOTTE.email, password: LOTTE.password });
    const fields = license === undefined ? { transaction } : { transaction, license };
    const response = await postForm(`${base}/license`, fields);
    const page = await response.text();
    return { response, page, [Symbol.asyncDispose]: () => running.close() };
  };

  it('after a choice, shows the consent page naming the client and the license', async () => {
    await using flow = await pick(VASTGOED.id);
    const { response, page } = flow;
    expect(response.status).toBe(200);
    expect(page).toContain(
      'Baton demande l’accès aux données de la licence « Vermeulen &amp; Zonen Vastgoed ».',
    );
    expect(page).toMatch(/<button[^>]+id="authorize"/);
    expect(page).toMatch(/<button[^>]+id="deny"/);
  });

  it('without a choice, shows the picker again with an error', async () => {
    await using flow = await pick(undefined);
    const { page } = flow;
    expect(page).toContain('Veuillez choisir une licence.');
    expect(page).toContain(`value="${BAKKERIJ.id}"`);
  });

  it('refuses a license of another account, showing the picker again', async () => {
    await using flow = await pick(LIBRAIRIE.id);
    const { page } = flow;
    expect(page).toContain('Veuillez choisir une licence.');
    expect(page).not.toMatch(/id="authorize"/);
  });
});

describe('POST /{locale}/api/oauth2/authorize/decision', () => {
  it('Authorize redirects to redirect_uri with code, the state unchanged and the api_url of the chosen license', async () => {
    await using running = await start();
    const state = 'a b+c/d=e&f?é%20';
    const response = await clickThrough(running, {
      account: LOTTE,
      license: VASTGOED,
      decision: 'authorize',
      params: devRequest({ state }),
    });
    expect(response.status).toBe(302);
    const location = new URL(response.headers.get('location') ?? '');
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT_URI);
    expect([...location.searchParams.keys()]).toEqual(['code', 'state', 'api_url']);
    expect(location.searchParams.get('code')).toMatch(CODE);
    expect(location.searchParams.get('state')).toBe(state);
    expect(location.searchParams.get('api_url')).toBe(`${running.url}/licenses/${VASTGOED.id}`);
  });

  it('each license has its own api_url', async () => {
    await using running = await start();
    const response = await clickThrough(running, {
      account: ELODIE,
      license: LIBRAIRIE,
      decision: 'authorize',
      locale: 'fr',
    });
    expect(callbackParams(response).get('api_url')).toBe(running.sandbox.apiUrl(LIBRAIRIE.id));
    expect(running.sandbox.apiUrl(LIBRAIRIE.id)).toBe(`${running.url}/licenses/lic-2001`);
  });

  it('Authorize omits state when the request had none', async () => {
    await using running = await start();
    const response = await clickThrough(running, {
      account: LOTTE,
      license: BAKKERIJ,
      decision: 'authorize',
    });
    expect([...callbackParams(response).keys()]).toEqual(['code', 'api_url']);
  });

  it("keeps the redirect_uri's own query as it was", async () => {
    await using running = await start();
    const redirectUri = 'http://127.0.0.1:9/cb?tenant=a%20b&x=1';
    running.sandbox.control.registerClient({ ...DEV_CLIENT, redirect_uris: [redirectUri] });
    const response = await clickThrough(running, {
      account: LOTTE,
      license: BAKKERIJ,
      decision: 'authorize',
      params: devRequest({ redirect_uri: redirectUri, state: 's1' }),
    });
    const location = response.headers.get('location') ?? '';
    expect(location.startsWith(`${redirectUri}&code=sbx_code_`)).toBe(true);
    expect(callbackParams(response).get('tenant')).toBe('a b');
    expect(callbackParams(response).get('state')).toBe('s1');
  });

  it('Deny redirects with the single parameter error=access_denied, even when state was sent', async () => {
    await using running = await start();
    const response = await clickThrough(running, {
      account: LOTTE,
      license: BAKKERIJ,
      decision: 'deny',
      params: devRequest({ state: 'kept-to-ourselves' }),
    });
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe(`${REDIRECT_URI}?error=access_denied`);
  });

  it('a pending authorization decides once: a second submission gets an error page', async () => {
    await using running = await start();
    const base = `${running.url}/nl/api/oauth2/authorize`;
    const first = await get(authorizeUrl(running, devRequest()));
    const transaction = transactionOf(await first.text());
    await postForm(`${base}/login`, { transaction, email: LOTTE.email, password: LOTTE.password });
    await postForm(`${base}/license`, { transaction, license: BAKKERIJ.id });
    const once = await postForm(`${base}/decision`, { transaction, decision: 'authorize' });
    const twice = await postForm(`${base}/decision`, { transaction, decision: 'authorize' });
    expect(once.status).toBe(302);
    expect(twice.status).toBe(400);
    expect(twice.headers.get('location')).toBeNull();
  });

  it('cannot skip the login: a decision needs a logged-in user and a license', async () => {
    await using running = await start();
    const first = await get(authorizeUrl(running, devRequest()));
    const transaction = transactionOf(await first.text());
    const response = await postForm(`${running.url}/nl/api/oauth2/authorize/decision`, {
      transaction,
      decision: 'authorize',
    });
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
  });
});

describe('scripted consent', () => {
  it('approve: GET authorize redirects at once with code, state and api_url', async () => {
    await using running = await start();
    running.sandbox.control.setConsent({
      mode: 'approve',
      email: ELODIE.email,
      licenseId: LIBRAIRIE.id,
    });
    const response = await get(authorizeUrl(running, devRequest({ state: 'xyz' })));
    const params = callbackParams(response);
    expect(response.status).toBe(302);
    expect(params.get('code')).toMatch(CODE);
    expect(params.get('state')).toBe('xyz');
    expect(params.get('api_url')).toBe(running.sandbox.apiUrl(LIBRAIRIE.id));
  });

  it('deny: GET authorize redirects at once with error=access_denied only', async () => {
    await using running = await start();
    running.sandbox.control.setConsent({ mode: 'deny' });
    const response = await get(authorizeUrl(running, devRequest({ state: 'xyz' })));
    expect(response.headers.get('location')).toBe(`${REDIRECT_URI}?error=access_denied`);
  });

  it('still validates the request first: an unregistered redirect_uri gets the error page', async () => {
    await using running = await start();
    running.sandbox.control.setConsent({ mode: 'deny' });
    const response = await get(
      authorizeUrl(running, devRequest({ redirect_uri: 'https://attacker.example/cb' })),
    );
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
  });

  it.each([
    ['only a license id: its owner', { licenseId: LIBRAIRIE.id }, ELODIE.email, LIBRAIRIE.id],
    ['only an email: its first license', { email: ELODIE.email }, ELODIE.email, LIBRAIRIE.id],
    ['neither: the first seeded license', {}, LOTTE.email, BAKKERIJ.id],
  ])('approve with %s', async (_, given, email, licenseId) => {
    await using running = await start();
    running.sandbox.control.setConsent({ mode: 'approve', ...given });
    expect(running.sandbox.control.consent()).toEqual({ mode: 'approve', email, licenseId });
    const response = await get(authorizeUrl(running, devRequest()));
    expect(callbackParams(response).get('api_url')).toBe(running.sandbox.apiUrl(licenseId));
  });

  it('refuses to approve for an account that does not own the license', async () => {
    await using running = await start();
    expect(() =>
      running.sandbox.control.setConsent({
        mode: 'approve',
        email: LOTTE.email,
        licenseId: LIBRAIRIE.id,
      }),
    ).toThrow(/does not own/);
  });
});

describe('GET /', () => {
  it('lists the demo accounts and their password', async () => {
    await using running = await start();
    const page = await (await get(`${running.url}/`)).text();
    expect(page).toContain('baton-demo');
    expect(page).toContain(LOTTE.email);
    expect(page).toContain(ELODIE.email);
  });
});
