/**
 * The rules for the URL of a proxied API call (`/connections/:id/api/<path>`), written once: the
 * broker applies the path's to every call, and the extension applies the id's and the path's to
 * its API messages before they leave (docs/extending.md), so that both refuse the same paths.
 */

/**
 * A connection id: base64url, as the broker mints them (16 random bytes, 22 characters), so that it
 * is one path segment as it stands and never a dot segment (`.`, `..`) that a URL parser resolves.
 */
const CONNECTION_ID = /^[A-Za-z0-9_-]{1,256}$/;

export function isConnectionId(id: string): boolean {
  return CONNECTION_ID.test(id);
}

const PLAIN_PATH = /^(?:[A-Za-z0-9_-][A-Za-z0-9._~-]*\/)*(?:[A-Za-z0-9_-][A-Za-z0-9._~-]*)?$/;
/**
 * The token endpoint's folder under api_url (`{api_url}/oauth2/access_token`, the provider's
 * spec): the broker's own business with the client secret, never an API call's, in any form a
 * server may read as that folder once decoded: any case, white space around it or dots after it
 * (Windows and IIS drop trailing ones), or a `;parameter` (servlet containers drop those).
 */
const TOKEN_FOLDER = /^\s*oauth2[\s.]*(?:[/;]|$)/i;
const FORBIDDEN_ENCODINGS = /%(?:2f|5c|2e|25|00|[01][0-9a-f]|7f)/i;

/**
 * The path below api_url that a proxied call asks for, exactly as it will be sent, or undefined
 * when it could leave api_url in any encoding. Refused, never normalised.
 */
export function checkProxyPath(raw: string): string | undefined {
  if (raw.length > 2048) return undefined;
  // Nearly every call: unreserved characters only, no segment that starts with a dot or is empty
  // but the last. Nothing below but the token folder could refuse such a path, so it is not
  // decoded to be checked.
  if (PLAIN_PATH.test(raw)) return TOKEN_FOLDER.test(raw) ? undefined : raw;
  if (!/^[\x21-\x7e]*$/.test(raw)) return undefined;
  if (raw.includes('\\') || FORBIDDEN_ENCODINGS.test(raw)) return undefined;
  let decoded: string;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    return undefined;
  }
  // Look-alikes (a fullwidth solidus or full stop) become real separators under NFKC.
  if (decoded.normalize('NFKC') !== decoded) return undefined;
  const segments = decoded.split('/');
  const last = segments.length - 1;
  // Servlet containers (Tomcat, Spring) drop a `;parameter` from a segment before resolving it,
  // so `..;x` climbs as `..` does.
  const unsafe = (segment: string, index: number) => {
    const name = segment.split(';', 1)[0];
    return (segment === '' && index !== last) || name === '.' || name === '..';
  };
  if (segments.some(unsafe) || (segments[0] ?? '').includes(':')) return undefined;
  return TOKEN_FOLDER.test(decoded) ? undefined : raw;
}
