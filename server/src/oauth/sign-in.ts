import type { AuthRedirectError, Locale } from '@baton/shared';
import type { Logger } from 'pino';
import { hashToken, randomToken, safeEqual } from '../base/crypto.ts';
import { keys } from '../store/keys.ts';
import type { Store } from '../store/types.ts';
import { checkApiUrl, type Allowlist } from './allowlist.ts';
import { FLOW_TTL_MS, livePending, MAX_PENDING_FLOWS, type PendingFlow } from './flows.ts';
import type { Handoffs } from './handoff.ts';
import type { Provider, TokenSet } from './provider.ts';

/**
 * Where one browser's pending flows are kept between its requests: the route keeps them in the
 * authorization window's cookie session, never in the extension.
 */
export interface BrowserFlows {
  /** As last saved (undefined: none yet), expired ones included. */
  readonly flows: readonly PendingFlow[] | undefined;
  save(flows: PendingFlow[]): Promise<void>;
}

/** What the broker is to the provider (config.provider), and where it may send the browser back. */
export interface SignInRegistration {
  authUrl: string;
  clientId: string;
  /** `${PUBLIC_URL}/auth/callback`, the redirect_uri registered at the provider. */
  redirectUri: string;
  apiUrlAllowlist: Allowlist;
}

export interface SignInDeps {
  store: Store;
  provider: Provider;
  handoffs: Handoffs;
  now: () => number;
  log: Logger;
  registration: SignInRegistration;
  /** The extension redirect URLs a flow may end at (EXTENSION_REDIRECT_URLS). */
  extensionRedirectUrls: readonly string[];
}

/** /auth/start, parsed: the extension's redirect URL and PKCE challenge, and the page language. */
export interface StartRequest {
  locale: Locale;
  redirectUri: string;
  challenge: string;
}

/** /auth/callback, parsed: each parameter given once as a plain string, else undefined. */
export interface Callback {
  state: string | undefined;
  /** The provider's `error`, when it sent one (the denial, or any other failure). */
  error: AuthRedirectError | undefined;
  apiUrl: string | undefined;
  code: string | undefined;
}

/** Where the browser goes next: a URL, or a page of the broker's saying why it cannot. */
export type Next = { redirect: string } | { refused: 'redirect_not_allowed' | 'no_flow' };

/**
 * The sign-in in the authorization window, as named use cases: `start` a flow, `complete` it at
 * the callback (claim its state, check api_url and the code, exchange the code, then `handOff`
 * the tokens to the extension). The routes (http/routes/auth.ts) parse, call one, and answer.
 */
export function createSignIn(deps: SignInDeps) {
  const { store, provider, handoffs, now, log, registration } = deps;

  const allowsRedirect = (uri: string | undefined): boolean =>
    uri !== undefined && deps.extensionRedirectUrls.includes(uri);

  /** Back to the extension's redirect URL, with the handoff or the error. */
  const backTo = (
    flow: PendingFlow,
    result: { handoff: string } | { error: AuthRedirectError },
  ): Next => {
    const target = new URL(flow.redirectUri);
    for (const [name, value] of Object.entries(result)) target.searchParams.set(name, value);
    return { redirect: target.href };
  };

  /**
   * Take a pending flow out of the browser's for good (read, delete, then check): saved without
   * it, and a claim in the store makes sure that of two concurrent callbacks with the same state
   * only one goes on.
   */
  async function claim(browser: BrowserFlows, flow: PendingFlow): Promise<boolean> {
    await browser.save((browser.flows ?? []).filter((other) => other.state !== flow.state));
    return store.setIfAbsent(keys.stateClaim(hashToken(flow.state)), '1', FLOW_TTL_MS);
  }

  /** The callback's api_url (allowlisted) and code exchanged for tokens, or why not. */
  async function exchange(
    callback: Callback,
  ): Promise<{ apiUrl: string; tokens: TokenSet } | { error: AuthRedirectError }> {
    const apiUrl =
      callback.apiUrl === undefined
        ? undefined
        : checkApiUrl(callback.apiUrl, registration.apiUrlAllowlist);
    if (apiUrl === undefined) {
      log.warn('authorization callback with an api_url outside the allowlist');
      return { error: 'invalid_api_url' };
    }
    const { code } = callback;
    if (code === undefined || code.length === 0 || code.length > 2048)
      return { error: 'exchange_failed' };
    try {
      return { apiUrl, tokens: await provider.exchangeCode(apiUrl, code) };
    } catch (error) {
      log.warn({ err: error, apiOrigin: new URL(apiUrl).origin }, 'code exchange failed');
      return { error: 'exchange_failed' };
    }
  }

  /** The new tokens sealed into a one-time handoff, carried back in the extension's URL. */
  async function handOff(flow: PendingFlow, apiUrl: string, tokens: TokenSet): Promise<Next> {
    const handoff = await handoffs.issue({ apiUrl, challenge: flow.challenge, tokens });
    return backTo(flow, { handoff });
  }

  return {
    /** GET /auth/redirect-check: whether the extension's redirect URL is one a flow may end at. */
    allowsRedirect,

    /**
     * GET /auth/start: a new flow (a random state) kept in the browser's, beside its other live
     * ones (the oldest give way), and the provider's authorization URL to send the browser to.
     */
    async start(request: StartRequest, browser: BrowserFlows): Promise<Next> {
      if (!allowsRedirect(request.redirectUri)) return { refused: 'redirect_not_allowed' };
      const flow: PendingFlow = {
        state: randomToken(32),
        redirectUri: request.redirectUri,
        challenge: request.challenge,
        locale: request.locale,
        createdAt: now(),
      };
      await browser.save([...livePending(browser.flows, now()), flow].slice(-MAX_PENDING_FLOWS));
      const authorize = new URL(`${registration.authUrl}/${request.locale}/api/oauth2/authorize`);
      authorize.search = new URLSearchParams({
        client_id: registration.clientId,
        response_type: 'code',
        redirect_uri: registration.redirectUri,
        state: flow.state,
      }).toString();
      return { redirect: authorize.href };
    },

    /**
     * GET /auth/callback. Any page the user visits can send this browser here (the SameSite=Lax
     * cookie goes along), so only a callback that carries a flow's own state may end that flow.
     * The provider's denial carries no state: it answers the most recent flow's extension URL and
     * leaves every flow to expire, as does a callback with an unknown state.
     */
    async complete(callback: Callback, browser: BrowserFlows): Promise<Next> {
      const pending = livePending(browser.flows, now());
      const latest = pending.at(-1);
      const { state } = callback;
      const flow = state === undefined ? undefined : pending.find((f) => safeEqual(f.state, state));
      if (!flow) {
        if (!latest) return { refused: 'no_flow' };
        if (callback.error !== undefined) return backTo(latest, { error: callback.error });
        log.warn('authorization callback with a missing or unknown state');
        return backTo(latest, { error: 'invalid_state' });
      }
      if (callback.error !== undefined) {
        await claim(browser, flow);
        return backTo(flow, { error: callback.error });
      }
      if (!(await claim(browser, flow))) {
        log.warn('authorization callback replayed');
        return backTo(flow, { error: 'invalid_state' });
      }
      const exchanged = await exchange(callback);
      return 'error' in exchanged
        ? backTo(flow, exchanged)
        : handOff(flow, exchanged.apiUrl, exchanged.tokens);
    },
  };
}
export type SignIn = ReturnType<typeof createSignIn>;
