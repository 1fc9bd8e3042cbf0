/**
 * Which `api_url` values the broker accepts from the provider's callback. The client secret and
 * every token go to the api_url, so this is the broker's most important gate: anything not plainly
 * and canonically an allowed origin is refused rather than normalised.
 */
export interface AllowlistEntry {
  scheme: 'http' | 'https';
  /** Lower-case host; with `wildcard`, the suffix after `*.`. */
  host: string;
  wildcard: boolean;
  port: string;
}
export type Allowlist = readonly AllowlistEntry[];

const DEFAULT_PORT = { http: '80', https: '443' } as const;
const ENTRY = /^(https?):\/\/(\*\.)?([a-z0-9.-]+|\[[0-9a-f:.]+\])(?::(\d{1,5}))?\/?$/i;
const MAX_API_URL_LENGTH = 2048;

export function parseAllowlist(value: string): Allowlist {
  const entries = value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
  if (entries.length === 0) throw new Error('must list at least one origin');
  return entries.map((entry) => {
    const [, rawScheme, star, host, port] = ENTRY.exec(entry) ?? [];
    if (rawScheme === undefined || host === undefined)
      throw new Error(`has an entry that is not scheme://host[:port]: ${entry}`);
    const scheme = rawScheme.toLowerCase() as 'http' | 'https';
    return {
      scheme,
      wildcard: star !== undefined,
      host: host.toLowerCase(),
      port: port ?? DEFAULT_PORT[scheme],
    };
  });
}

/** Unsafe anywhere in an api_url: whitespace, controls, backslashes, encoded separators or dots. */
const FORBIDDEN = /[\s\p{Cc}\\@#?]|%(?:2f|5c|2e|00|25)/iu;

/**
 * The api_url to store (origin plus path, no trailing slash) when `raw` is allowed, else
 * undefined. Canonical form only: what the WHATWG parser gives back must be what was sent.
 */
export function checkApiUrl(raw: string, allowlist: Allowlist): string | undefined {
  if (raw.length === 0 || raw.length > MAX_API_URL_LENGTH || FORBIDDEN.test(raw)) return undefined;
  const url = URL.parse(raw);
  if (!url || url.username || url.password || url.search || url.hash) return undefined;
  const scheme = url.protocol.slice(0, -1);
  if (scheme !== 'http' && scheme !== 'https') return undefined;
  const path = url.pathname.replace(/\/+$/, '');
  if (path.split('/').some((segment) => segment === '..' || segment === '.')) return undefined;
  if (path.includes('//')) return undefined;
  const canonical = `${url.origin}${path}`;
  if (raw.replace(/\/+$/, '') !== canonical) return undefined;
  const port = url.port || DEFAULT_PORT[scheme];
  const host = url.hostname.toLowerCase();
  const allowed = allowlist.some(
    (entry) =>
      entry.scheme === scheme &&
      entry.port === port &&
      (entry.wildcard ? matchesOneLabel(host, entry.host) : host === entry.host),
  );
  return allowed ? canonical : undefined;
}

function matchesOneLabel(host: string, suffix: string): boolean {
  if (!host.endsWith(`.${suffix}`)) return false;
  const label = host.slice(0, -suffix.length - 1);
  return /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(label);
}
