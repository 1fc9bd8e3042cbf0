import { DEMO_PASSWORD } from '@baton/sandbox';
import { fetch, type Dispatcher } from 'undici';

/**
 * The sandbox's authorization pages answered without a browser, as a user would answer them:
 * GET authorize (the login page, under the sandbox's interactive consent), then the login, license
 * and decision forms, each carrying the page's transaction. Unlike scripted consent (one setting
 * for the whole sandbox), each flow picks its own account and license, so many can run at once.
 * Resolves with where the provider redirects: the broker's callback with `code`, `state` and
 * `api_url` (or `error=access_denied`).
 */
export async function consentThroughPages(
  authorizeUrl: URL,
  choice: {
    email: string;
    licenseId: string;
    decision?: 'authorize' | 'deny';
    dispatcher?: Dispatcher;
    /** Give up (reject) after this long, for each page. */
    timeoutMs?: number;
  },
): Promise<URL> {
  const locale = /^\/(fr|nl)\//.exec(authorizeUrl.pathname)?.[1];
  if (!locale) throw new Error(`not an authorization URL: ${authorizeUrl.pathname}`);
  const step = async (url: URL, form?: Record<string, string>) => {
    const response = await fetch(url, {
      method: form ? 'POST' : 'GET',
      redirect: 'manual',
      ...(form
        ? {
            body: new URLSearchParams(form).toString(),
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
          }
        : {}),
      ...(choice.dispatcher ? { dispatcher: choice.dispatcher } : {}),
      ...(choice.timeoutMs === undefined ? {} : { signal: AbortSignal.timeout(choice.timeoutMs) }),
    });
    return {
      status: response.status,
      location: response.headers.get('location'),
      page: await response.text(),
    };
  };
  const action = (name: string) =>
    new URL(`/${locale}/api/oauth2/authorize/${name}`, authorizeUrl.origin);
  const transactionOf = (page: string, what: string): string => {
    const found = /id="transaction" name="transaction" value="([^"]+)"/.exec(page)?.[1];
    if (!found) throw new Error(`the sandbox's ${what} page has no transaction`);
    return found;
  };
  const login = await step(authorizeUrl);
  if (login.status !== 200) throw new Error(`authorize answered ${login.status}`);
  const transaction = transactionOf(login.page, 'login');
  const license = await step(action('login'), {
    transaction,
    email: choice.email,
    password: DEMO_PASSWORD,
  });
  if (license.status !== 200 || !license.page.includes(`license-${choice.licenseId}`))
    throw new Error(
      `the login was refused (${license.status}) or ${choice.licenseId} is not listed`,
    );
  const consent = await step(action('license'), { transaction, license: choice.licenseId });
  if (consent.status !== 200) throw new Error(`choosing the license answered ${consent.status}`);
  const decision = await step(action('decision'), {
    transaction,
    decision: choice.decision ?? 'authorize',
  });
  if (decision.status !== 302 || decision.location === null)
    throw new Error(`the decision answered ${decision.status}`);
  return new URL(decision.location);
}
