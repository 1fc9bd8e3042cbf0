import {
  codeChallengeS256,
  createCodeVerifier,
  isAuthRedirectError,
  routes,
  type AuthStartQuery,
  type Locale,
} from '@baton/shared';
import { ProblemError, type ProblemCode } from '../problems.ts';

/**
 * The pure parts of the authorization flow: the `/auth/start` URL, reading the final redirect,
 * and telling a closed window from a failed one. The orchestration is in service.ts.
 */

export interface Pkce {
  readonly verifier: string;
  readonly challenge: string;
}

export async function createPkce(createVerifier: () => string = createCodeVerifier): Promise<Pkce> {
  const verifier = createVerifier();
  return { verifier, challenge: await codeChallengeS256(verifier) };
}

export function authStartUrl(
  brokerUrl: string,
  locale: Locale,
  redirectUri: string,
  challenge: string,
): string {
  const query: AuthStartQuery = {
    locale,
    redirect_uri: redirectUri,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  };
  return `${brokerUrl}${routes.authStart}?${new URLSearchParams(query).toString()}`;
}

/**
 * The flow ends at the extension's redirect URL with `?handoff=` or `?error=`. Returns the
 * handoff; throws the redirect's error (`access_denied`, ...) as a problem.
 */
export function readFinalRedirect(finalUrl: string | undefined, redirectUri: string): string {
  if (finalUrl === undefined || finalUrl === '') throw new ProblemError({ code: 'cancelled' });
  let url: URL;
  try {
    url = new URL(finalUrl);
  } catch {
    throw new ProblemError({ code: 'unexpected' });
  }
  if (url.origin !== new URL(redirectUri).origin) throw new ProblemError({ code: 'unexpected' });
  const error = url.searchParams.get('error');
  if (error !== null) {
    throw new ProblemError({ code: isAuthRedirectError(error) ? error : 'unexpected' });
  }
  const handoff = url.searchParams.get('handoff');
  if (handoff === null || handoff === '') throw new ProblemError({ code: 'unexpected' });
  return handoff;
}

/**
 * `launchWebAuthFlow` rejects with a message only. Chrome: "The user did not approve access."
 * when the window is closed, "Authorization page could not be loaded." otherwise; Firefox:
 * "User cancelled or denied access.". Closing the window is a cancel, not an error.
 */
export function launchFailure(error: unknown): ProblemCode {
  const message = error instanceof Error ? error.message : String(error);
  return /did not approve|cancel|denied|closed/i.test(message) ? 'cancelled' : 'auth_page_failed';
}
