import express from 'express';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { accessLog, createTracker, requestId } from './access-log.ts';
import { createLogger } from '../ops/logger.ts';

let close: (() => void) | undefined;
afterEach(() => close?.());

/** An app behind accessLog whose log lines are kept; `/fail` answers 500, `/hang` never answers. */
async function serve(): Promise<{
  url: string;
  lines: Record<string, unknown>[];
  hanging: Promise<undefined>;
}> {
  const lines: Record<string, unknown>[] = [];
  let arrived = (): void => {};
  const hanging = new Promise<undefined>((resolve) => (arrived = () => resolve(undefined)));
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  const app = express();
  app.use(accessLog(createTracker(createLogger('info', sink))));
  app.get('/fail', (_req, res) => {
    res.status(500).end();
  });
  app.get('/hang', () => arrived());
  app.get('/id', (_req, res) => {
    res.json({ id: requestId(res) ?? null });
  });
  app.use((_req, res) => {
    res.json({ ok: true });
  });
  const server = createServer(app).listen(0, '127.0.0.1');
  await once(server, 'listening');
  close = () => {
    server.closeAllConnections();
    server.close();
  };
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, lines, hanging };
}

describe('the access log', () => {
  it('writes one line per request with its id, path, status and time, and never the query', async () => {
    const { url, lines } = await serve();
    const answer = await fetch(`${url}/auth/callback?code=sbx_code_secret&state=xyz`);
    await answer.text();
    await expect.poll(() => lines.length).toBe(1);

    const id = answer.headers.get('x-request-id');
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(lines[0]).toMatchObject({
      level: 30,
      reqId: id,
      method: 'GET',
      path: '/auth/callback',
      status: 200,
      msg: 'request completed',
    });
    expect(typeof lines[0]!.ms).toBe('number');
    expect(JSON.stringify(lines)).not.toMatch(/sbx_code_secret|xyz/);
  });

  it('keeps a well-formed incoming request id and replaces any other', async () => {
    const { url } = await serve();
    const kept = await fetch(url, { headers: { 'x-request-id': 'lb-42.a_b' } });
    expect(kept.headers.get('x-request-id')).toBe('lb-42.a_b');
    const replaced = await fetch(url, { headers: { 'x-request-id': 'a b<script>' } });
    expect(replaced.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('tells other log lines about the request its id', async () => {
    const { url } = await serve();
    const answer = await fetch(`${url}/id`, { headers: { 'x-request-id': 'lb-7' } });
    expect(await answer.json()).toEqual({ id: 'lb-7' });
    const fresh = await fetch(`${url}/id`);
    expect(await fresh.json()).toEqual({ id: fresh.headers.get('x-request-id') });
  });

  it('logs a 5xx as an error and a request the client gave up on as aborted', async () => {
    const { url, lines, hanging } = await serve();
    await (await fetch(`${url}/fail`)).text();
    const gaveUp = new AbortController();
    const call = fetch(`${url}/hang`, { signal: gaveUp.signal }).catch(() => {});
    await hanging;
    gaveUp.abort();
    await call;
    await expect.poll(() => lines.length).toBe(2);
    expect(lines[0]).toMatchObject({ level: 50, path: '/fail', status: 500 });
    expect(lines[1]).toMatchObject({ level: 40, path: '/hang', msg: 'request aborted' });
  });

  it('leaves the redaction of every other line of the logger in place', () => {
    const kept: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        kept.push(chunk.toString());
        done();
      },
    });
    const log = createLogger('info', sink);
    createTracker(log);
    log.info({ body: { refresh_token: 'sbx_rt_x' } }, 'oops');
    expect(kept.join('')).toContain('[redacted]');
    expect(kept.join('')).not.toContain('sbx_rt_x');
  });
});
