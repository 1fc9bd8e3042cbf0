import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FakeBroker, type FakeLicense } from '../src/testing/fake-broker.ts';

/**
 * The unit tests' in-memory broker (src/testing/fake-broker.ts) behind a real HTTP port, plus a
 * scripted `/auth/start` standing in for the broker and the provider's pages: it redirects
 * straight to the extension's redirect URL with a handoff or an error, or shows a page that
 * stays open (the user is "signing in"). For screenshots and manual checks, not a broker.
 */
export type AuthBehaviour =
  | { readonly kind: 'grant'; readonly license: FakeLicense }
  | { readonly kind: 'error'; readonly error: string }
  | { readonly kind: 'hold' };

export interface FakeBrokerServer {
  readonly url: string;
  readonly broker: FakeBroker;
  onAuthStart(behaviour: AuthBehaviour): void;
  /** Closes the port (the broker becomes unreachable) until `start()`. */
  stop(): Promise<void>;
  start(): Promise<void>;
}

const HOLD_PAGE = `<!doctype html><html lang="en"><meta charset="utf-8"><title>Provider sign-in</title>
<body style="font:16px system-ui;padding:2rem"><h1>Provider sign-in (fake)</h1>
<p>This window stands for the provider's authorization pages.</p></body></html>`;

export async function startFakeBrokerServer(port = 0): Promise<FakeBrokerServer> {
  let behaviour: AuthBehaviour = { kind: 'hold' };
  let base = '';
  let broker: FakeBroker | null = null;

  const server = createServer((request, response) => {
    void handle(request, response).catch((error: unknown) => {
      console.error('fake broker:', error);
      response.writeHead(500).end();
    });
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', base);
    if (broker === null) throw new Error('not started');
    if (request.method === 'GET' && url.pathname === '/auth/start') {
      const redirectUri = url.searchParams.get('redirect_uri') ?? '';
      const challenge = url.searchParams.get('code_challenge') ?? '';
      if (behaviour.kind === 'hold') {
        response.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(HOLD_PAGE);
        return;
      }
      const query =
        behaviour.kind === 'grant'
          ? `handoff=${encodeURIComponent(broker.issueHandoff(behaviour.license, challenge))}`
          : `error=${encodeURIComponent(behaviour.error)}`;
      response.writeHead(302, { Location: `${redirectUri}?${query}` }).end();
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.headers)) {
      if (typeof value === 'string') headers[name] = value;
    }
    const answer = await broker.fetch(`${base}${url.pathname}`, {
      method: request.method ?? 'GET',
      headers,
      ...(chunks.length > 0 && { body: Buffer.concat(chunks).toString('utf8') }),
    });
    response.writeHead(answer.status, Object.fromEntries(answer.headers));
    response.end(Buffer.from(await answer.arrayBuffer()));
  }

  const listen = (p: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(p, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
    });

  const boundPort = await listen(port);
  base = `http://127.0.0.1:${boundPort}`;
  broker = new FakeBroker(base, () => Date.now());
  const fake = broker;

  return {
    url: base,
    broker: fake,
    onAuthStart(next) {
      behaviour = next;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
    start: async () => {
      await listen(boundPort);
    },
  };
}
