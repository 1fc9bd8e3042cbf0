import express, { type RequestHandler } from 'express';
import helmet from 'helmet';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { fixedHeaders } from './security-headers.ts';

async function headersBehind(middleware: RequestHandler): Promise<Record<string, string>> {
  const app = express();
  app.disable('x-powered-by');
  app.use(middleware);
  app.get('/', (_req, res) => {
    res.end('ok');
  });
  const server = createServer(app).listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const answer = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    await answer.text();
    const headers = Object.fromEntries(answer.headers);
    delete headers.date;
    return headers;
  } finally {
    server.closeAllConnections();
    server.close();
  }
}

describe('fixedHeaders', () => {
  it('sets exactly the headers helmet sets, on every response', async () => {
    const options = {
      contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"] } },
      strictTransportSecurity: { maxAge: 31_536_000, includeSubDomains: true },
    };
    const direct = await headersBehind(helmet(options));
    expect(direct['content-security-policy']).toBe("default-src 'none'");
    const fixed = fixedHeaders(helmet(options));
    const viaList: RequestHandler = (_req, res, next) => {
      fixed(res);
      next();
    };
    expect(await headersBehind(viaList)).toEqual(direct);
  });

  it('refuses a middleware that does not pass the request on at once', () => {
    expect(() => fixedHeaders(() => {})).toThrow(/did not pass the request on/);
  });
});
