import { once } from 'node:events';
import { Writable } from 'node:stream';
import { Worker } from 'node:worker_threads';
import { Agent, MockAgent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../ops/logger.ts';
import { createProvider, ProviderError } from './provider.ts';

const API_URL = 'https://eu.api.example.test/licenses/1';
const TOKENS = {
  token_type: 'Bearer',
  expires_in: 3600,
  access_token: 'at-1',
  refresh_token: 'rt-1',
};

let agent: MockAgent | undefined;
afterEach(async () => {
  await agent?.close();
  agent = undefined;
});

/** A provider over a mock token endpoint that answers `reply` and keeps each form it was sent. */
function providerAnswering(reply: { status: number; body: string }) {
  agent = new MockAgent();
  agent.disableNetConnect();
  const forms: URLSearchParams[] = [];
  agent
    .get('https://eu.api.example.test')
    .intercept({
      path: '/licenses/1/oauth2/access_token',
      method: 'POST',
      body: (body) => {
        forms.push(new URLSearchParams(body));
        return true;
      },
    })
    .reply(reply.status, reply.body, { headers: { 'content-type': 'application/json' } })
    .persist();
  const provider = createProvider({
    clientId: 'client',
    clientSecret: 'secret',
    redirectUri: 'https://broker.example.test/auth/callback',
    dispatcher: agent,
    now: () => 1_000,
    timeoutMs: 1_000,
  });
  return { provider, forms };
}

describe('the token requests', () => {
  it('exchanges a code with grant_type auth_code (never authorization_code), as the provider requires', async () => {
    const { provider, forms } = providerAnswering({ status: 200, body: JSON.stringify(TOKENS) });
    await expect(provider.exchangeCode(API_URL, 'code-1')).resolves.toEqual({
      accessToken: 'at-1',
      refreshToken: 'rt-1',
      expiresAt: 1_000 + 3_600_000,
    });
    expect(Object.fromEntries(forms[0]!)).toEqual({
      grant_type: 'auth_code',
      code: 'code-1',
      redirect_uri: 'https://broker.example.test/auth/callback',
      client_id: 'client',
      client_secret: 'secret',
    });
  });

  it('refreshes with grant_type refresh_token', async () => {
    const { provider, forms } = providerAnswering({ status: 200, body: JSON.stringify(TOKENS) });
    await provider.refresh(API_URL, 'rt-0');
    expect(Object.fromEntries(forms[0]!)).toEqual({
      grant_type: 'refresh_token',
      refresh_token: 'rt-0',
      client_id: 'client',
      client_secret: 'secret',
    });
  });

  it('calls a 4xx a rejection', async () => {
    const { provider } = providerAnswering({ status: 400, body: '{"error":"invalid_grant"}' });
    await expect(provider.refresh(API_URL, 'rt-0')).rejects.toMatchObject({
      failure: 'rejected',
    } satisfies Partial<ProviderError>);
  });
});

describe('a token response the broker cannot use', () => {
  const TOKEN = 'at-must-never-be-logged';

  /** The log line the broker writes for `error` (as the code exchange does), as text. */
  function logged(error: unknown): string {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        lines.push(chunk.toString());
        callback();
      },
    });
    createLogger('info', sink).warn({ err: error }, 'code exchange failed');
    return lines.join('');
  }

  it.each([
    ['the bare token as text', TOKEN],
    ['JSON with the token unquoted', `{"token_type":"Bearer","access_token": ${TOKEN}}`],
    [
      'JSON with the token in a wrong field type',
      JSON.stringify({ ...TOKENS, access_token: [TOKEN] }),
    ],
    [
      'JSON with a token that is not printable',
      JSON.stringify({ ...TOKENS, access_token: `${TOKEN} x` }),
    ],
  ])('%s: lost, and neither the error nor its log line quotes the body', async (_name, body) => {
    const { provider } = providerAnswering({ status: 200, body });
    const error = await provider.exchangeCode(API_URL, 'code-1').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ failure: 'lost' });
    const line = logged(error);
    expect(line).toContain('token response is not a valid token set');
    expect(line).not.toContain('at-must');
  });
});

describe('a broker paused while the provider answers (SIGSTOP, a long GC)', () => {
  /**
   * A token endpoint on a thread of its own, so that it answers while this one is frozen. The
   * shared flags: [0] the request arrived, [1] this thread froze, [2] the answer was written.
   */
  function endpointOnAThread() {
    const flags = new Int32Array(new SharedArrayBuffer(12));
    const worker = new Worker(
      `const { createServer } = require('node:http');
       const { parentPort, workerData: flags } = require('node:worker_threads');
       const server = createServer((request, response) => {
         request.resume();
         Atomics.store(flags, 0, 1);
         Atomics.notify(flags, 0);
         // The answer goes out only once the broker is frozen: it waits in the socket.
         Atomics.wait(flags, 1, 0);
         response.end(${JSON.stringify(JSON.stringify(TOKENS))}, () => {
           Atomics.store(flags, 2, 1);
           Atomics.notify(flags, 2);
         });
       });
       server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));`,
      { eval: true, workerData: flags },
    );
    return { flags, worker, port: once(worker, 'message').then(([port]) => port as number) };
  }

  it('reads an answer that arrived during the pause, though the pause outlasted the request’s timeout', async () => {
    const { flags, worker, port } = endpointOnAThread();
    const dispatcher = new Agent();
    try {
      const timeoutMs = 200;
      const provider = createProvider({
        clientId: 'client',
        clientSecret: 'secret',
        redirectUri: 'https://broker.example.test/auth/callback',
        dispatcher,
        now: () => 1_000,
        timeoutMs,
      });
      const refreshed = provider.refresh(`http://127.0.0.1:${await port}/licenses/1`, 'rt-0');
      const outcome = refreshed.then(
        (tokens) => tokens,
        (error: unknown) => error,
      );
      // The request is at the provider: freeze this thread until the answer is in the socket and
      // the request's timeout has passed, as a SIGSTOP would (timers then run before the socket
      // is read).
      await new Promise<void>((resolve) => {
        const arrived = () => (Atomics.load(flags, 0) === 1 ? resolve() : setImmediate(arrived));
        arrived();
      });
      const frozenAt = performance.now();
      Atomics.store(flags, 1, 1);
      Atomics.notify(flags, 1);
      Atomics.wait(flags, 2, 0);
      const left = timeoutMs + 50 - (performance.now() - frozenAt);
      if (left > 0) Atomics.wait(flags, 2, 1, left);
      await expect(outcome).resolves.toMatchObject({ accessToken: 'at-1', refreshToken: 'rt-1' });
    } finally {
      await dispatcher.close();
      await worker.terminate();
    }
    // (A worker thread to start: seconds on a busy machine, which measure nothing here.)
  }, 30_000);
  it('reads an answer whose body comes after the request’s timeout, once its headers arrived', async () => {
    const timeoutMs = 200;
    // Headers at once; the body three timeouts later (a provider, or a proxy, that flushes late).
    const worker = new Worker(
      `const { createServer } = require('node:http');
       const { parentPort } = require('node:worker_threads');
       const server = createServer((request, response) => {
         request.resume();
         response.writeHead(200, { 'content-type': 'application/json' });
         response.flushHeaders();
         Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ${3 * timeoutMs});
         response.end(${JSON.stringify(JSON.stringify(TOKENS))});
       });
       server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));`,
      { eval: true },
    );
    const dispatcher = new Agent();
    try {
      const [port] = (await once(worker, 'message')) as [number];
      const provider = createProvider({
        clientId: 'client',
        clientSecret: 'secret',
        redirectUri: 'https://broker.example.test/auth/callback',
        dispatcher,
        now: () => 1_000,
        timeoutMs,
        bodyTimeoutMs: 20_000,
      });
      await expect(
        provider.refresh(`http://127.0.0.1:${port}/licenses/1`, 'rt-0'),
      ).resolves.toMatchObject({ accessToken: 'at-1', refreshToken: 'rt-1' });
    } finally {
      await dispatcher.close();
      await worker.terminate();
    }
  }, 30_000);
});
