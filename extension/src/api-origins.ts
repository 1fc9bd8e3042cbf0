/**
 * The origins whose pages the extension's API answers (docs/extending.md), fixed at build time by
 * `WXT_API_ORIGINS`: a comma-separated list such as `https://app.example.com, https://*.example.org`.
 * wxt.config.ts checks the list and every content script's `matches` against it; the background
 * checks each content script's message against it. Pure, so the build and the tests use it too.
 *
 * An entry names a scheme and a host, never a port: match patterns carry none (Firefox refuses
 * one, and Chrome and Firefox then match every port), so every port of a listed host is answered
 * alike. `*.` before a host lists the host and all its subdomains, as a match pattern does.
 */
export interface ApiOrigin {
  readonly scheme: 'https' | 'http';
  /** Lower case, as `URL.hostname` writes it. */
  readonly host: string;
  /** Whether subdomains of `host` are listed too (`https://*.example.com`). */
  readonly subdomains: boolean;
}

export type ApiOriginsResult =
  | { readonly ok: true; readonly origins: readonly ApiOrigin[] }
  | { readonly ok: false; readonly problems: readonly string[] };

/** Plain http only where nothing leaves the machine (development and the tests). */
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
const ENTRY = /^(https?):\/\/(\*\.)?([^/?#*]+?)\/?$/;

/**
 * Reads `WXT_API_ORIGINS` (unset or empty: no origin, and no content script may use the API). A
 * release build (`release`) takes https origins only. Every problem is named at once.
 */
export function parseApiOrigins(
  raw: string | undefined,
  options: { readonly release?: boolean } = {},
): ApiOriginsResult {
  const entries = (raw ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  const origins: ApiOrigin[] = [];
  const problems: string[] = [];
  for (const entry of entries) {
    const parsed = parseEntry(entry, options.release === true);
    if (typeof parsed === 'string') problems.push(`${JSON.stringify(entry)} ${parsed}`);
    else origins.push(parsed);
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, origins };
}

/** The origin of one entry, or why it is refused. */
function parseEntry(entry: string, release: boolean): ApiOrigin | string {
  const match = ENTRY.exec(entry);
  if (match === null)
    return 'is not scheme://host (http or https, no path, query or wildcard but *.)';
  const [, scheme = '', wildcard, host = ''] = match;
  let url: URL;
  try {
    url = new URL(`${scheme}://${host}/`);
  } catch {
    return 'is not a valid origin';
  }
  if (url.port !== '' || /:\d*$/.test(host))
    return 'has a port: match patterns carry none, so list the host alone (every port is answered)';
  if (url.host !== host) return `is not written as the browser writes it (${url.host})`;
  const subdomains = wildcard !== undefined;
  if (subdomains && (!host.includes('.') || /^[\d.]+$/.test(host) || host.startsWith('[')))
    return 'lists the subdomains of something that is not a domain name';
  if (scheme === 'http') {
    if (release) return 'is plain http, which a release build never answers';
    if (subdomains || !LOOPBACK_HOSTS.has(host))
      return 'is plain http on a host other than localhost, 127.0.0.1 or [::1]';
  }
  return { scheme: scheme as ApiOrigin['scheme'], host, subdomains };
}

/** Whether a page of `origin` (any port) is listed. */
export function originAllowed(origin: string, origins: readonly ApiOrigin[]): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  return origins.some(
    (o) =>
      url.protocol === `${o.scheme}:` &&
      (url.hostname === o.host || (o.subdomains && url.hostname.endsWith(`.${o.host}`))),
  );
}

/** The match pattern that covers one listed origin. */
export function matchPatternFor(origin: ApiOrigin): string {
  return `${origin.scheme}://${origin.subdomains ? '*.' : ''}${origin.host}/*`;
}

const PATTERN = /^(https?):\/\/(\*\.)?([^/*]+)\/.*$/;

/**
 * Whether a content script's match pattern stays within the listed origins: an explicit scheme
 * (not `*`), and a host that is listed, or subdomains of a listed `*.` host. `<all_urls>` and a
 * bare `*` host never are.
 */
export function matchPatternAllowed(pattern: string, origins: readonly ApiOrigin[]): boolean {
  const match = PATTERN.exec(pattern);
  if (match === null) return false;
  const [, scheme = '', wildcard, host = ''] = match;
  if (wildcard === undefined) return originAllowed(`${scheme}://${host}`, origins);
  return origins.some(
    (o) => o.scheme === scheme && o.subdomains && (host === o.host || host.endsWith(`.${o.host}`)),
  );
}

/**
 * What a development build (any build but a release) answers besides WXT_API_ORIGINS: pages served
 * on this machine, on any port (`scripts/baton start`, the end-to-end tests, an integrator's app
 * under development). Never in a release build, which takes https only.
 */
export const DEVELOPMENT_API_ORIGINS: readonly ApiOrigin[] = [
  { scheme: 'http', host: 'localhost', subdomains: false },
  { scheme: 'http', host: '127.0.0.1', subdomains: false },
];

const sameOrigin = (a: ApiOrigin, b: ApiOrigin) =>
  a.scheme === b.scheme && a.host === b.host && a.subdomains === b.subdomains;

/** `first`, then those of `then` it does not hold yet. */
export function mergeApiOrigins(
  first: readonly ApiOrigin[],
  then: readonly ApiOrigin[],
): ApiOrigin[] {
  const merged = [...first];
  for (const origin of then) if (!merged.some((o) => sameOrigin(o, origin))) merged.push(origin);
  return merged;
}

/** The list written as WXT_API_ORIGINS reads it: `https://app.example.com,https://*.example.org`. */
export function formatApiOrigins(origins: readonly ApiOrigin[]): string {
  return origins.map((o) => `${o.scheme}://${o.subdomains ? '*.' : ''}${o.host}`).join(',');
}

/** A content script as the generated manifest declares it: its file and its match patterns. */
export interface DeclaredContentScript {
  readonly file: string;
  readonly matches: readonly string[];
}

/**
 * Why these content scripts cannot be built with these origins, or null when every match pattern
 * is within them. The message names each pattern beyond the list with its script, and says what
 * to set WXT_API_ORIGINS to (what it lists already, and the origin of each pattern that an entry
 * can list) and how: for `scripts/baton start` in a development build, for the release command in
 * a release build (https only). `listed` is WXT_API_ORIGINS as given.
 */
export function contentScriptsProblem(
  scripts: readonly DeclaredContentScript[],
  origins: readonly ApiOrigin[],
  context: { readonly release: boolean; readonly listed: string | undefined },
): string | null {
  const lines: string[] = [];
  const given = parseApiOrigins(context.listed, { release: context.release });
  // What the integrator lists, without what a development build adds by itself.
  let toList = (given.ok ? given.origins : []).filter(
    (o) => context.release || !DEVELOPMENT_API_ORIGINS.some((d) => sameOrigin(d, o)),
  );
  let listable = 0;
  for (const script of scripts)
    for (const pattern of script.matches) {
      if (matchPatternAllowed(pattern, origins)) continue;
      const origin = originToList(pattern, context.release);
      if (origin === null) {
        lines.push(
          `  - ${pattern} (${script.file}): no entry of WXT_API_ORIGINS can list it; narrow the script's matches to https://host/… (${context.release ? 'https only in a release build' : 'or http on localhost or 127.0.0.1'})`,
        );
      } else {
        lines.push(`  - ${pattern} (${script.file})`);
        toList = mergeApiOrigins(toList, [origin]);
        listable += 1;
      }
    }
  if (lines.length === 0) return null;
  const value = formatApiOrigins(toList);
  const how =
    listable === 0
      ? []
      : context.release
        ? [
            'Set WXT_API_ORIGINS to their origins in the release command (docs/extending.md):',
            `  WXT_BROKER_URL=… WXT_GECKO_ID=… WXT_API_ORIGINS=${value} pnpm --filter @baton/extension release`,
            '(.ci/run passes WXT_API_ORIGINS on from its environment: set it in your CI.)',
          ]
        : [
            'Set WXT_API_ORIGINS to their origins wherever this extension is built (docs/extending.md):',
            `  WXT_API_ORIGINS=${value} bash scripts/baton start`,
            '(the same for `bash scripts/baton test` and `pnpm --filter @baton/extension build`; .ci/run passes it on from its environment.)',
          ];
  return [
    `Content scripts match pages beyond WXT_API_ORIGINS (${context.listed ?? 'unset'}), where the background would refuse every call:`,
    ...lines,
    ...how,
  ].join('\n');
}

/** The entry of WXT_API_ORIGINS that lists a pattern's pages, or null when none can. */
function originToList(pattern: string, release: boolean): ApiOrigin | null {
  const match = PATTERN.exec(pattern);
  if (match === null) return null;
  const [, scheme = '', wildcard = '', host = ''] = match;
  const parsed = parseApiOrigins(`${scheme}://${wildcard}${host}`, { release });
  const origin = parsed.ok ? parsed.origins[0] : undefined;
  return origin !== undefined && matchPatternAllowed(pattern, [origin]) ? origin : null;
}
