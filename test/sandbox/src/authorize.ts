import express, { type Request, type Response } from 'express';
import { isLocale, type Locale } from './accounts.ts';
import {
  consentPage,
  errorPage,
  licensePage,
  loginPage,
  notFoundPage,
  type AuthorizeProblem,
} from './pages.ts';
import type { SandboxClient, State } from './state.ts';

const PAGE_HEADERS = {
  'Content-Type': 'text/html; charset=utf-8',
  'Cache-Control': 'no-store',
  'Content-Security-Policy':
    "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
};

function sendPage(res: Response, status: number, page: string): void {
  res.status(status).set(PAGE_HEADERS).send(page);
}

/** redirect_uri with `params` appended; its own query is kept byte for byte. */
export function callbackUrl(redirectUri: string, params: Record<string, string>): string {
  const url = new URL(redirectUri);
  const added = new URLSearchParams(params).toString();
  url.search = url.search === '' ? added : `${url.search.slice(1)}&${added}`;
  return url.href;
}

function redirect(res: Response, location: string): void {
  res.status(302).set({ Location: location, 'Cache-Control': 'no-store' }).end();
}

type Checked =
  | { ok: true; client: SandboxClient; redirectUri: string; state: string | undefined }
  | { ok: false; problem: AuthorizeProblem };

/**
 * The authorization request's parameters, checked in an order that never trusts redirect_uri
 * before it is known to be registered for a known client.
 */
function checkRequest(state: State, query: URLSearchParams): Checked {
  for (const param of ['client_id', 'response_type', 'redirect_uri', 'state']) {
    if (query.getAll(param).length > 1) return { ok: false, problem: { kind: 'repeated', param } };
  }
  const clientId = query.get('client_id');
  if (clientId === null) return { ok: false, problem: { kind: 'missing', param: 'client_id' } };
  const client = state.findClient(clientId);
  if (!client) return { ok: false, problem: { kind: 'unknown_client' } };
  const redirectUri = query.get('redirect_uri');
  if (redirectUri === null)
    return { ok: false, problem: { kind: 'missing', param: 'redirect_uri' } };
  if (!client.redirect_uris.includes(redirectUri))
    return { ok: false, problem: { kind: 'unregistered_redirect_uri' } };
  const responseType = query.get('response_type');
  if (responseType === null)
    return { ok: false, problem: { kind: 'missing', param: 'response_type' } };
  if (responseType !== 'code') return { ok: false, problem: { kind: 'unsupported_response_type' } };
  return { ok: true, client, redirectUri, state: query.get('state') ?? undefined };
}

const formValue = (req: Request, name: string): string | undefined => {
  const value: unknown = (req.body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : undefined;
};

/**
 * GET /{fr|nl}/api/oauth2/authorize, then the login, license and decision forms it leads to.
 * The pending authorization stays server-side, keyed by a random transaction id in the forms.
 */
export function authorizeRoutes(state: State, apiUrl: (licenseId: string) => string) {
  const router = express.Router({ caseSensitive: true, strict: true });
  const form = express.urlencoded({ extended: false, limit: '16kb' });

  function approve(
    res: Response,
    grant: { client: SandboxClient; redirectUri: string; state: string | undefined },
    owner: { email: string; licenseId: string },
  ): void {
    const code = state.issueCode({
      clientId: grant.client.client_id,
      redirectUri: grant.redirectUri,
      ...owner,
    });
    const params: Record<string, string> = { code };
    if (grant.state !== undefined) params.state = grant.state;
    params.api_url = apiUrl(owner.licenseId);
    redirect(res, callbackUrl(grant.redirectUri, params));
  }

  const deny = (res: Response, redirectUri: string): void =>
    redirect(res, callbackUrl(redirectUri, { error: 'access_denied' }));

  /** The path's locale, or a 404 page when it is not exactly fr or nl. */
  function localeOf(req: Request, res: Response): Locale | undefined {
    const { locale } = req.params;
    if (typeof locale === 'string' && isLocale(locale)) return locale;
    sendPage(res, 404, notFoundPage());
    return undefined;
  }

  router.get('/:locale/api/oauth2/authorize', (req, res) => {
    const locale = localeOf(req, res);
    if (!locale) return;
    const checked = checkRequest(state, new URL(req.originalUrl, 'http://sandbox').searchParams);
    if (!checked.ok) return sendPage(res, 400, errorPage(locale, checked.problem));
    const { consent } = state;
    if (consent.mode === 'approve') return approve(res, checked, consent);
    if (consent.mode === 'deny') return deny(res, checked.redirectUri);
    const transaction = state.startTransaction({ ...checked, locale });
    sendPage(
      res,
      200,
      loginPage({
        locale,
        transactionId: transaction.id,
        clientName: checked.client.name ?? checked.client.client_id,
      }),
    );
  });

  router.post('/:locale/api/oauth2/authorize/login', form, (req, res) => {
    const locale = localeOf(req, res);
    if (!locale) return;
    const transaction = state.findTransaction(formValue(req, 'transaction') ?? '');
    if (!transaction) return sendPage(res, 400, errorPage(locale, { kind: 'expired' }));
    const email = formValue(req, 'email') ?? '';
    const account = state.checkPassword(email, formValue(req, 'password') ?? '');
    const common = { locale: transaction.locale, transactionId: transaction.id };
    if (!account) {
      const clientName = transaction.client.name ?? transaction.client.client_id;
      return sendPage(res, 200, loginPage({ ...common, clientName, email, error: true }));
    }
    transaction.account = account;
    delete transaction.license;
    sendPage(res, 200, licensePage({ ...common, account }));
  });

  router.post('/:locale/api/oauth2/authorize/license', form, (req, res) => {
    const locale = localeOf(req, res);
    if (!locale) return;
    const transaction = state.findTransaction(formValue(req, 'transaction') ?? '');
    const account = transaction?.account;
    if (!transaction || !account) return sendPage(res, 400, errorPage(locale, { kind: 'expired' }));
    const common = { locale: transaction.locale, transactionId: transaction.id, account };
    const license = account.licenses.find(({ id }) => id === formValue(req, 'license'));
    if (!license) return sendPage(res, 200, licensePage({ ...common, error: true }));
    transaction.license = license;
    const clientName = transaction.client.name ?? transaction.client.client_id;
    sendPage(res, 200, consentPage({ ...common, clientName, license }));
  });

  router.post('/:locale/api/oauth2/authorize/decision', form, (req, res) => {
    const locale = localeOf(req, res);
    if (!locale) return;
    // Consumed before it is checked: a second submission finds nothing.
    const transaction = state.takeTransaction(formValue(req, 'transaction') ?? '');
    const { account, license } = transaction ?? {};
    if (!transaction || !account || !license)
      return sendPage(res, 400, errorPage(locale, { kind: 'expired' }));
    const decision = formValue(req, 'decision');
    if (decision === 'authorize')
      return approve(res, transaction, { email: account.email, licenseId: license.id });
    if (decision === 'deny') return deny(res, transaction.redirectUri);
    sendPage(res, 400, errorPage(transaction.locale, { kind: 'missing', param: 'decision' }));
  });

  return router;
}
