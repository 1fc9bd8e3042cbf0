import type { Request, RequestHandler, Response } from 'express';
import helmet from 'helmet';
import type { ServerResponse } from 'node:http';

/** Sets a fixed list of headers on a response. */
export type SetHeaders = (res: ServerResponse) => void;

/** helmet's headers for the broker's HTML pages (the authorization window's errors). */
export function pageHeaders(https: boolean): SetHeaders {
  return fixedHeaders(
    helmet({
      contentSecurityPolicy: {
        useDefaults: false,
        directives: {
          defaultSrc: ["'none'"],
          styleSrc: ["'unsafe-inline'"],
          frameAncestors: ["'none'"],
          formAction: ["'none'"],
          baseUri: ["'none'"],
        },
      },
      strictTransportSecurity: https ? { maxAge: 31_536_000, includeSubDomains: true } : false,
      referrerPolicy: { policy: 'no-referrer' },
      xFrameOptions: { action: 'deny' },
    }),
  );
}

/**
 * A proxied answer is JSON for the extension, never a page: it needs what OWASP's REST cheat sheet
 * lists (no sniffing, no framing, no content, HSTS), not helmet's headers for documents. Fewer
 * header bytes on every API call, measurably.
 */
export function apiHeaders(https: boolean): SetHeaders {
  return fixedHeaders(
    helmet({
      contentSecurityPolicy: {
        useDefaults: false,
        directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] },
      },
      strictTransportSecurity: https ? { maxAge: 31_536_000, includeSubDomains: true } : false,
      xFrameOptions: { action: 'deny' },
      crossOriginOpenerPolicy: false,
      crossOriginResourcePolicy: false,
      originAgentCluster: false,
      referrerPolicy: false,
      xDnsPrefetchControl: false,
      xDownloadOptions: false,
      xPermittedCrossDomainPolicies: false,
      xXssProtection: false,
    }),
  );
}

/**
 * The headers `middleware` sets, worked out once; the function sets them from that list on a
 * response. helmet's are the same for every request here (no nonce, no per-request directive), and
 * this skips building the CSP string per request. Refuses a middleware that does anything else.
 */
export function fixedHeaders(middleware: RequestHandler): SetHeaders {
  const headers: [string, string][] = [];
  let passed = false;
  const probe = {
    setHeader: (name: string, value: unknown) => headers.push([name, String(value)]),
    removeHeader: () => {},
  };
  middleware({ headers: {} } as Request, probe as unknown as Response, () => (passed = true));
  if (!passed) throw new Error('fixedHeaders: the middleware did not pass the request on at once');
  return (res) => {
    for (const [name, value] of headers) res.setHeader(name, value);
  };
}
