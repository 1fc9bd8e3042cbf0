import {
  codeChallengeS256,
  createCodeVerifier,
  routes,
  sessionCreateResponseSchema,
  type Locale,
  type SessionCreateResponse,
} from '@baton/shared';
import { EXTENSION_REDIRECT, type Stack } from './stack.ts';

/**
 * A minimal browser for the authorization window: follows redirects one at a time, keeps cookies
 * per host, and stops at the extension's redirect URL (where identity.launchWebAuthFlow would).
 */
export class TestBrowser {
  readonly cookies = new Map<string, Map<string, string>>();

  async get(url: string, headers: Record<string, string> = {}): Promise<Response> {
    const host = new URL(url).host;
    const jar = this.cookies.get(host);
    const cookie = jar ? [...jar].map(([name, value]) => `${name}=${value}`).join('; ') : '';
    const response = await fetch(url, {
      redirect: 'manual',
      headers: { ...headers, ...(cookie ? { cookie } : {}) },
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const [name = '', ...value] = pair.split('=');
      const hostJar = this.cookies.get(host) ?? new Map<string, string>();
      hostJar.set(name.trim(), value.join('='));
      this.cookies.set(host, hostJar);
    }
    return response;
  }

  /** Follow redirects from `url` until a non-redirect answer or the extension's redirect URL. */
  async navigate(url: string): Promise<{ final: URL; response?: Response; hops: URL[] }> {
    const hops: URL[] = [];
    let current = new URL(url);
    for (let hop = 0; hop < 10; hop++) {
      hops.push(current);
      if (current.href.startsWith(EXTENSION_REDIRECT)) return { final: current, hops };
      const response = await this.get(current.href);
      const location = response.headers.get('location');
      if (response.status < 300 || response.status >= 400 || location === null)
        return { final: current, response, hops };
      current = new URL(location, current);
    }
    throw new Error('too many redirects');
  }
}

export interface StartedFlow {
  verifier: string;
  /** The provider's authorize URL the broker redirected to. */
  authorizeUrl: URL;
  state: string;
}

/** GET /auth/start as the extension's launchWebAuthFlow would, stopping at the provider. */
export async function startFlow(
  stack: Stack,
  browser: TestBrowser,
  locale: Locale = 'nl',
): Promise<StartedFlow> {
  const verifier = createCodeVerifier();
  const start = new URL(routes.authStart, stack.broker.url);
  start.search = new URLSearchParams({
    locale,
    redirect_uri: EXTENSION_REDIRECT,
    code_challenge: await codeChallengeS256(verifier),
    code_challenge_method: 'S256',
  }).toString();
  const response = await browser.get(start.href);
  if (response.status !== 302) throw new Error(`/auth/start answered ${response.status}`);
  const authorizeUrl = new URL(response.headers.get('location')!);
  return { verifier, authorizeUrl, state: authorizeUrl.searchParams.get('state')! };
}

/** The provider's answer for a started flow, with consent scripted at the sandbox. */
export async function providerCallback(flow: StartedFlow): Promise<URL> {
  const response = await fetch(flow.authorizeUrl, { redirect: 'manual' });
  if (response.status !== 302) throw new Error(`authorize answered ${response.status}`);
  return new URL(response.headers.get('location')!);
}

/** The whole flow up to the extension's redirect URL: `?handoff=` or `?error=`. */
export async function authorize(
  stack: Stack,
  options: { browser?: TestBrowser; licenseId?: string; locale?: Locale } = {},
): Promise<{ result: URL; verifier: string }> {
  const browser = options.browser ?? new TestBrowser();
  stack.sandbox.sandbox.control.setConsent({
    mode: 'approve',
    ...(options.licenseId ? { licenseId: options.licenseId } : {}),
  });
  const flow = await startFlow(stack, browser, options.locale);
  const { final } = await browser.navigate(flow.authorizeUrl.href);
  return { result: final, verifier: flow.verifier };
}

export async function redeem(
  stack: Stack,
  handoff: string,
  verifier: string,
  sessionToken?: string,
): Promise<Response> {
  return fetch(new URL(routes.session, stack.broker.url), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(sessionToken ? { authorization: `Bearer ${sessionToken}` } : {}),
    },
    body: JSON.stringify({ handoff, code_verifier: verifier }),
  });
}

/** Connect a license end to end and return the broker's answer to POST /session. */
export async function connect(
  stack: Stack,
  options: { licenseId?: string; sessionToken?: string } = {},
): Promise<SessionCreateResponse> {
  const { result, verifier } = await authorize(stack, options);
  const handoff = result.searchParams.get('handoff');
  if (handoff === null) throw new Error(`flow ended with ${result.search}`);
  const response = await redeem(stack, handoff, verifier, options.sessionToken);
  if (response.status !== 201) throw new Error(`POST /session answered ${response.status}`);
  return sessionCreateResponseSchema.parse(await response.json());
}

/** A broker call with the session token. */
export function call(
  stack: Stack,
  path: string,
  sessionToken: string,
  init: RequestInit = {},
): Promise<Response> {
  return fetch(new URL(path, stack.broker.url), {
    ...init,
    headers: { authorization: `Bearer ${sessionToken}`, ...(init.headers ?? {}) },
  });
}
