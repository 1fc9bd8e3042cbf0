import { createHash } from 'node:crypto';
import { EventEmitter, once } from 'node:events';
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, type Dispatcher } from 'undici';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { exchange, UpstreamError, type Answer } from './upstream.ts';

/** A front that calls `exchange` for every request, and what each exchange came to. */
interface World {
  front: string;
  upstreamSockets: () => number;
  answers: Promise<Answer | UpstreamError>[];
  cuts: Error[];
}

const servers: Server[] = [];
const agents: Agent[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    server.close();
  }
  await Promise.all(agents.splice(0).map((agent) => agent.destroy()));
});

async function listen(listener: RequestListener): Promise<{ server: Server; url: string }> {
  const server = createServer(listener);
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

async function world(
  upstream: RequestListener,
  relay: (status: number) => boolean = () => true,
): Promise<World> {
  const { server, url: origin } = await listen(upstream);
  let sockets = 0;
  server.on('connection', () => sockets++);
  const agent = new Agent();
  agents.push(agent);
  const answers: World['answers'] = [];
  const cuts: Error[] = [];
  const { url: front } = await listen((req: IncomingMessage, res: ServerResponse) => {
    const answer = exchange(
      agent,
      { origin, path: req.url ?? '/', method: 'GET' },
      res,
      relay,
      (error) => cuts.push(error),
    ).then(
      (answer) => {
        if (!answer.relayed) res.writeHead(299).end(`dropped ${answer.status}`);
        return answer;
      },
      (error: unknown) => {
        res.writeHead(502).end('no upstream');
        return error as UpstreamError;
      },
    );
    answers.push(answer);
  });
  return { front, upstreamSockets: () => sockets, answers, cuts };
}

const sha = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

describe('exchange', () => {
  it('streams an 8 MB answer whole, with its status, the returned headers only, and no-store', async () => {
    const body = Buffer.alloc(8 * 1024 * 1024, 'baton');
    const { front, answers } = await world((_req, res) => {
      res.writeHead(203, {
        'content-type': 'application/octet-stream',
        'set-cookie': 'upstream=1',
        location: '/elsewhere',
        'x-upstream': 'private',
      });
      res.end(body);
    });
    const response = await fetch(`${front}/big`);
    const received = Buffer.from(await response.arrayBuffer());
    expect(response.status).toBe(203);
    expect(received.length).toBe(body.length);
    expect(sha(received)).toBe(sha(body));
    expect(response.headers.get('content-type')).toBe('application/octet-stream');
    expect(response.headers.get('cache-control')).toBe('no-store');
    for (const name of ['set-cookie', 'location', 'x-upstream'])
      expect(response.headers.get(name)).toBeNull();
    expect(await answers[0]).toEqual({ status: 203, relayed: true });
    // (8 MB through two sockets: seconds on a busy machine, which measure nothing here.)
  }, 30_000);

  it('drops an answer it is told not to pass on, leaving the response untouched and the connection reusable', async () => {
    const { front, answers, upstreamSockets } = await world(
      (req, res) => {
        res.writeHead(req.url === '/first' ? 401 : 200, { 'set-cookie': 'x=1' });
        res.end(req.url === '/first' ? 'expired token' : 'fine');
      },
      (status) => status !== 401,
    );
    const first = await fetch(`${front}/first`);
    expect(first.status).toBe(299);
    expect(await first.text()).toBe('dropped 401');
    expect(first.headers.get('cache-control')).toBeNull();
    expect(await answers[0]).toEqual({ status: 401, relayed: false });
    const second = await fetch(`${front}/second`);
    expect(await second.text()).toBe('fine');
    expect(upstreamSockets()).toBe(1);
  });

  it('cuts the upstream connection rather than read a large answer it drops', async () => {
    let upstreamClosed!: (finished: boolean) => void;
    const closed = new Promise<boolean>((resolve) => (upstreamClosed = resolve));
    const { front, answers } = await world(
      (_req, res) => {
        res.on('close', () => upstreamClosed(res.writableFinished));
        res.writeHead(302, { location: '/elsewhere' });
        const chunk = Buffer.alloc(64 * 1024, 'x');
        const more = (): void => {
          while (res.write(chunk));
          res.once('drain', more);
        };
        more();
      },
      (status) => status < 300,
    );
    const response = await fetch(`${front}/redirect`);
    expect(await response.text()).toBe('dropped 302');
    expect(await answers[0]).toEqual({ status: 302, relayed: false });
    expect(await closed).toBe(false);
  });

  it('cuts the answer when the upstream fails midway: never a short answer passed off as whole', async () => {
    const { front, answers, cuts } = await world((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '100000' });
      res.write('a'.repeat(1000), () => res.socket?.destroy());
    });
    const response = await fetch(`${front}/cut`);
    expect(response.status).toBe(200);
    await expect(response.text()).rejects.toThrow();
    expect(await answers[0]).toEqual({ status: 200, relayed: true });
    expect(cuts).toHaveLength(1);
  });

  it('aborts the upstream request when the client goes midway', async () => {
    let upstreamClosed!: (finished: boolean) => void;
    const closed = new Promise<boolean>((resolve) => (upstreamClosed = resolve));
    const { front, answers, cuts } = await world((_req, res) => {
      res.on('close', () => upstreamClosed(res.writableFinished));
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first part, and the rest never comes');
    });
    const client = httpRequest(`${front}/slow`);
    client.end();
    const [response] = (await once(client, 'response')) as [IncomingMessage];
    await once(response, 'data');
    client.destroy();
    expect(await closed).toBe(false);
    expect(await answers[0]).toEqual({ status: 200, relayed: true });
    expect(cuts.map((error) => error.message)).toEqual([
      'the client closed the connection before the answer ended',
    ]);
  });

  it('rejects when no upstream answers, and leaves the response to the caller', async () => {
    const { server, url } = await listen(() => {});
    server.close();
    await once(server, 'close');
    const agent = new Agent();
    agents.push(agent);
    const { url: front } = await listen((_req, res) => {
      exchange(
        agent,
        { origin: url, path: '/', method: 'GET' },
        res,
        () => true,
        () => {},
      ).catch((error: unknown) => {
        res.writeHead(503).end(error instanceof UpstreamError ? 'upstream error' : 'other');
      });
    });
    const response = await fetch(front);
    expect(response.status).toBe(503);
    expect(await response.text()).toBe('upstream error');
  });

  it('pauses the upstream while the client is slow, and resumes it when the client drains', async () => {
    let handler!: Dispatcher.DispatchHandler;
    const dispatcher = {
      dispatch: (_options: unknown, given: Dispatcher.DispatchHandler) => {
        handler = given;
        return true;
      },
    } as unknown as Dispatcher;
    let full = false;
    const res = Object.assign(new EventEmitter(), {
      destroyed: false,
      writableFinished: false,
      statusCode: 0,
      setHeader: vi.fn(),
      write: vi.fn(() => !full),
      end: vi.fn(),
    });
    const controller = {
      pause: vi.fn(),
      resume: vi.fn(),
      abort: vi.fn(),
      aborted: false,
      paused: false,
      reason: null,
    };
    const answer = exchange(
      dispatcher,
      { path: '/', method: 'GET' },
      res as never,
      () => true,
      () => {},
    );
    handler.onRequestStart?.(controller, {});
    handler.onResponseStart?.(controller, 200, {});
    handler.onResponseData?.(controller, Buffer.from('one'));
    expect(controller.pause).not.toHaveBeenCalled();
    full = true;
    handler.onResponseData?.(controller, Buffer.from('two'));
    expect(controller.pause).toHaveBeenCalledTimes(1);
    expect(controller.resume).not.toHaveBeenCalled();
    full = false;
    res.emit('drain');
    expect(controller.resume).toHaveBeenCalledTimes(1);
    handler.onResponseEnd?.(controller, {});
    expect(res.end).toHaveBeenCalledTimes(1);
    expect(await answer).toEqual({ status: 200, relayed: true });
    // Settled, it holds on to nothing of the call: a late drain resumes nothing.
    res.emit('drain');
    expect(controller.resume).toHaveBeenCalledTimes(1);
    expect(res.listenerCount('close') + res.listenerCount('drain')).toBe(0);
  });
});
