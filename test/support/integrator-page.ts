import { createServer, type Server } from 'node:http';

/** The path the end-to-end build's probe content script is declared for (api-probe.content.ts). */
export const PROBE_PATH = '/baton-e2e/page.html';

/** The path its storage probe is declared for (storage-probe.content.ts), on 127.0.0.1 only. */
export const STORAGE_PROBE_PATH = '/baton-e2e-storage/page.html';

const PATHS = [PROBE_PATH, STORAGE_PROBE_PATH];

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>An integrator's page</title></head>
<body><h1>An integrator's page</h1></body></html>`;

export interface IntegratorPages extends AsyncDisposable {
  /** The page's URL on `host`, as started (`path`: PROBE_PATH unless said). */
  url(host: string, query?: string, path?: string): string;
}

/**
 * An integrator's web page, served on each of `hosts` (loopback addresses bound one by one, each
 * on a port of its own), for the extension's content scripts to run on. The page itself does
 * nothing: what appears in it is the probe content script's.
 */
export async function serveIntegratorPages(hosts: readonly string[]): Promise<IntegratorPages> {
  const servers = new Map<string, { server: Server; port: number }>();
  for (const host of hosts) {
    const server = createServer((req, res) => {
      if (!PATHS.includes(req.url?.split('?')[0] ?? '')) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, {
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-store',
      });
      res.end(PAGE);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, host, resolve);
    });
    servers.set(host, { server, port: (server.address() as { port: number }).port });
  }
  return {
    url(host, query, path = PROBE_PATH) {
      const entry = servers.get(host);
      if (entry === undefined) throw new Error(`no page served on ${host}`);
      return `http://${host}:${entry.port}${path}${query === undefined ? '' : `?${query}`}`;
    },
    async [Symbol.asyncDispose]() {
      await Promise.all(
        [...servers.values()].map(
          ({ server }) =>
            new Promise<void>((resolve) => {
              server.close(() => resolve());
              // The browser's kept-alive connections would hold close() open.
              server.closeAllConnections();
            }),
        ),
      );
    },
  };
}
