import { Router, type Response } from 'express';
import { readdirSync, readFileSync } from 'node:fs';

/**
 * The admin console's page and its assets, served by the admin listener before its token gate:
 * they hold no data (everything comes from /api/v1, with the operator's token).
 *
 *   GET /                  static/console.html
 *   GET /console.css       static/console.css
 *   GET /console.js        static/console.js, the entry module, which imports
 *   GET /console/<m>.js    static/console/<m>.js
 *   GET /console/icon.svg  static/console/icon.svg (else the browser asks for /favicon.ico: a 404)
 *
 * static/ sits beside this module in the source, and beside the bundle in dist/ (the build copies
 * it to dist/static/: server/scripts/build.ts), so the one relative URL finds it either way. The
 * files are read once, when the router is made: a deployment that lacks them fails at start-up,
 * not on an operator's first visit.
 */
const STATIC = new URL('./static/', import.meta.url);

const TYPES = {
  html: 'text/html; charset=utf-8',
  css: 'text/css; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  svg: 'image/svg+xml',
} as const;

/** Only this origin's script and style, no inline code or eval, no framing, no form submitted. */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

const HEADERS = {
  'Content-Security-Policy': CONSOLE_CSP,
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

/** Every path the console answers, and the file behind it. */
export function consoleFiles(dir: URL = STATIC): Map<string, { file: URL; type: string }> {
  const files = new Map<string, { file: URL; type: string }>([
    ['/', { file: new URL('console.html', dir), type: TYPES.html }],
    ['/console.css', { file: new URL('console.css', dir), type: TYPES.css }],
    ['/console.js', { file: new URL('console.js', dir), type: TYPES.js }],
  ]);
  for (const name of readdirSync(new URL('console/', dir)).sort()) {
    const type = name.endsWith('.js') ? TYPES.js : name.endsWith('.svg') ? TYPES.svg : undefined;
    if (type !== undefined)
      files.set(`/console/${name}`, { file: new URL(`console/${name}`, dir), type });
  }
  return files;
}

/** `dir`: the static folder (a test's own). */
export function consoleRouter(options: { dir?: URL } = {}): Router {
  // As the admin app routes: exact case, no trailing slash.
  const router = Router({ strict: true, caseSensitive: true });
  for (const [path, { file, type }] of consoleFiles(options.dir)) {
    const body = readFileSync(file);
    router.get(path, (_req, res: Response) => {
      res.set({ ...HEADERS, 'Content-Type': type });
      res.send(body);
    });
  }
  return router;
}
