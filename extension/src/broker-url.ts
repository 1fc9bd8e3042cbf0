/**
 * The broker's address: parsed and normalised once, wherever it comes from (the build's
 * `WXT_BROKER_URL`, the options page, stored settings). Pure, so `wxt.config.ts` can use it too.
 */

/** Used when the build has no `WXT_BROKER_URL`. */
export const DEFAULT_BROKER_URL = 'http://127.0.0.1:8787';

export type BrokerUrlProblem =
  | 'empty'
  | 'not_a_url'
  | 'unsupported_scheme'
  | 'insecure'
  | 'has_credentials'
  | 'has_query_or_fragment';

export type BrokerUrlResult =
  | { readonly ok: true; readonly url: string }
  | { readonly ok: false; readonly problem: BrokerUrlProblem };

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * Accepts `https://host[:port][/base/path]`, or plain `http` on a loopback host (development).
 * Returns the URL without a trailing slash, so that `url + routes.x` is the endpoint.
 */
export function parseBrokerUrl(input: string): BrokerUrlResult {
  const trimmed = input.trim();
  if (trimmed === '') return { ok: false, problem: 'empty' };
  let url: URL;
  try {
    url = new URL(trimmed);
  } catch {
    return { ok: false, problem: 'not_a_url' };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    return { ok: false, problem: 'unsupported_scheme' };
  }
  if (url.protocol === 'http:' && !LOOPBACK_HOSTS.has(url.hostname)) {
    return { ok: false, problem: 'insecure' };
  }
  if (url.username !== '' || url.password !== '') return { ok: false, problem: 'has_credentials' };
  if (url.search !== '' || url.hash !== '' || trimmed.includes('?') || trimmed.includes('#')) {
    return { ok: false, problem: 'has_query_or_fragment' };
  }
  const path = url.pathname.replace(/\/+$/, '');
  return { ok: true, url: `${url.origin}${path}` };
}

/**
 * The host permission that lets the extension call the broker. Match patterns carry no port
 * (Firefox rejects one; Chrome then matches every port), so the whole host is requested.
 */
export function hostPermissionFor(brokerUrl: string): string {
  const url = new URL(brokerUrl);
  return `${url.protocol}//${url.hostname}/*`;
}

/** Host and port, for sentences such as "Baton can't reach 127.0.0.1:8787". */
export function displayHost(brokerUrl: string): string {
  try {
    return new URL(brokerUrl).host;
  } catch {
    return brokerUrl;
  }
}
