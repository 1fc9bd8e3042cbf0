/** Helpers for the sandbox's own tests: a real server on port 0 with a frozen, injected clock. */
import { ACCOUNTS, type Account, type License } from './accounts.ts';
import { startSandbox, type RunningSandbox, type StartSandboxOptions } from './index.ts';
import { DEV_CLIENT, type SandboxClient, type TokenResponse } from './state.ts';

/** The injected clock never moves by itself: tests move it with `control.clock.advance`. */
export const START = Date.UTC(2026, 10, 21, 9, 0, 0);

function seeded(email: string): Account {
  const account = ACCOUNTS.find((candidate) => candidate.email === email);
  if (!account) throw new Error(`seed account ${email} is missing`);
  return account;
}
function licenseAt(account: Account, index: number): License {
  const license = account.licenses[index];
  if (!license) throw new Error(`${account.email} has no license #${index}`);
  return license;
}

/** Dutch-speaking, two licenses. */
export const LOTTE = seeded('lotte.vermeulen@example.be');
export const BAKKERIJ = licenseAt(LOTTE, 0);
export const VASTGOED = licenseAt(LOTTE, 1);
/** French-speaking, one license. */
export const ELODIE = seeded('elodie.lambert@example.be');
export const LIBRAIRIE = licenseAt(ELODIE, 0);

export const REDIRECT_URI = DEV_CLIENT.redirect_uris[0] ?? '';

export async function start(options: StartSandboxOptions = {}): Promise<RunningSandbox> {
  return startSandbox({ now: () => START, ...options });
}

export function authorizeUrl(
  running: RunningSandbox,
  params: Record<string, string>,
  locale = 'nl',
): string {
  return `${running.url}/${locale}/api/oauth2/authorize?${new URLSearchParams(params)}`;
}

/** The usual, valid authorization request of the development client. */
export const devRequest = (extra: Record<string, string> = {}): Record<string, string> => ({
  client_id: DEV_CLIENT.client_id,
  response_type: 'code',
  redirect_uri: REDIRECT_URI,
  ...extra,
});

export const get = (url: string, init: RequestInit = {}): Promise<Response> =>
  fetch(url, { redirect: 'manual', ...init });

export const postForm = (url: string, fields: Record<string, string>): Promise<Response> =>
  fetch(url, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });

export function transactionOf(page: string): string {
  const id = /name="transaction" value="([^"]+)"/.exec(page)?.[1];
  if (id === undefined) throw new Error('the page has no transaction field');
  return id;
}

/** Drives the pages as a browser would, up to the decision; returns the decision's answer. */
export async function clickThrough(
  running: RunningSandbox,
  input: {
    account: Account;
    license: License;
    decision: 'authorize' | 'deny';
    params?: Record<string, string>;
    locale?: string;
  },
): Promise<Response> {
  const locale = input.locale ?? 'nl';
  const base = `${running.url}/${locale}/api/oauth2/authorize`;
  const login = await get(authorizeUrl(running, input.params ?? devRequest(), locale));
  const transaction = transactionOf(await login.text());
  const picker = await postForm(`${base}/login`, {
    transaction,
    email: input.account.email,
    password: input.account.password,
  });
  if (picker.status !== 200) throw new Error(`login answered ${picker.status}`);
  const consent = await postForm(`${base}/license`, { transaction, license: input.license.id });
  if (consent.status !== 200) throw new Error(`license answered ${consent.status}`);
  return postForm(`${base}/decision`, { transaction, decision: input.decision });
}

/** Query parameters of a redirect's Location. */
export function callbackParams(response: Response): URLSearchParams {
  const location = response.headers.get('location');
  if (location === null) throw new Error(`no Location header (status ${response.status})`);
  return new URL(location).searchParams;
}

/** A code for `license`, through scripted consent (the pages are tested on their own). */
export async function issueCode(
  running: RunningSandbox,
  license: License,
  input: { client?: SandboxClient; redirectUri?: string } = {},
): Promise<{ code: string; apiUrl: string }> {
  const owner = ACCOUNTS.find((account) => account.licenses.includes(license));
  if (!owner) throw new Error(`nobody owns ${license.id}`);
  const { control } = running.sandbox;
  control.setConsent({ mode: 'approve', email: owner.email, licenseId: license.id });
  const client = input.client ?? DEV_CLIENT;
  const params = {
    client_id: client.client_id,
    response_type: 'code',
    redirect_uri: input.redirectUri ?? client.redirect_uris[0] ?? '',
  };
  const response = await get(authorizeUrl(running, params));
  control.setConsent({ mode: 'interactive' });
  const query = callbackParams(response);
  const code = query.get('code');
  const apiUrl = query.get('api_url');
  if (code === null || apiUrl === null) throw new Error('no code or api_url in the callback');
  return { code, apiUrl };
}

export const tokenEndpoint = (apiUrl: string): string => `${apiUrl}/oauth2/access_token`;

export function tokenRequest(
  apiUrl: string,
  fields: Record<string, string>,
  client: SandboxClient = DEV_CLIENT,
): Promise<Response> {
  return postForm(tokenEndpoint(apiUrl), {
    client_id: client.client_id,
    client_secret: client.client_secret,
    ...fields,
  });
}

export const exchangeFields = (code: string): Record<string, string> => ({
  grant_type: 'auth_code',
  code,
  redirect_uri: REDIRECT_URI,
});

/** A code exchanged for tokens: a connected license. */
export async function connect(
  running: RunningSandbox,
  license: License,
): Promise<TokenResponse & { apiUrl: string }> {
  const { code, apiUrl } = await issueCode(running, license);
  const response = await tokenRequest(apiUrl, exchangeFields(code));
  if (response.status !== 200) throw new Error(`code exchange answered ${response.status}`);
  return { ...((await response.json()) as TokenResponse), apiUrl };
}

export const refreshWith = (apiUrl: string, refreshToken: string): Promise<Response> =>
  tokenRequest(apiUrl, { grant_type: 'refresh_token', refresh_token: refreshToken });

export const usersMe = (apiUrl: string, accessToken: string): Promise<Response> =>
  get(`${apiUrl}/users.me`, { headers: { authorization: `Bearer ${accessToken}` } });
