import { BROKER_ERROR_HEADER } from '@baton/shared';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { composeServices } from '../compose.ts';
import { loadConfig } from '../config/config.ts';
import { createApp } from './app.ts';
import { storeDeps } from './stores.ts';

/**
 * The broker answers the routes docs/openapi.json lists, with the methods it lists, and nothing
 * else: "Any path or method not listed here answers components.responses.UnknownRoute".
 */
const DOCUMENT = JSON.parse(
  readFileSync(new URL('../../../docs/openapi.json', import.meta.url), 'utf8'),
) as { paths: Record<string, Record<string, { responses?: Record<string, unknown> }>> };
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
/** A concrete path for a template: any connection id, a plain path below api_url. */
const concrete = (template: string): string =>
  template.replace('{id}', 'c1').replace('{path}', 'users.me');

let url: string;
let closeBroker: () => Promise<void>;
beforeAll(async () => {
  const stores = storeDeps(undefined);
  const config = loadConfig({ LOG_LEVEL: 'silent' });
  const dispatcher = new Agent();
  const log = pino({ level: 'silent' });
  const services = composeServices({ config, store: stores.store, dispatcher, log });
  const { app } = createApp({ config, ...stores, dispatcher, log, services });
  const server = createServer(app).listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  closeBroker = async () => {
    server.close();
    await dispatcher.close();
  };
});
afterAll(() => closeBroker());

/** A request sent as is (fetch refuses TRACE, and normalises nothing here either). */
function ask(method: string, path: string): Promise<{ status: number; mark: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method }, (res) => {
      res.resume();
      res.on('end', () => {
        const mark = res.headers[BROKER_ERROR_HEADER.toLowerCase()];
        resolve({ status: res.statusCode ?? 0, mark: typeof mark === 'string' ? mark : undefined });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

const UNKNOWN = { status: 404, mark: 'not_found' };

describe('routing', () => {
  it.each([
    ['GET', '/healthz/'],
    ['GET', '/HEALTHZ'],
    ['GET', '/Healthz'],
    ['GET', '/readyz/'],
    ['GET', '/READYZ'],
    ['GET', '/connections/'],
    ['GET', '/Connections'],
    ['DELETE', '/session/'],
    ['DELETE', '/SESSION'],
    ['DELETE', '/connections/c1/'],
    ['DELETE', '/CONNECTIONS/c1'],
    ['GET', '/auth/redirect-check/?redirect_uri=x'],
    ['GET', '/AUTH/redirect-check?redirect_uri=x'],
    ['GET', '/auth/start/'],
    ['GET', '/auth/Start'],
    ['GET', '/auth/callback/'],
    ['GET', '/Connections/c1/api/users.me'],
    ['GET', '/connections/c1/API/users.me'],
  ])(
    'answers UnknownRoute to %s %s: a route differs by a trailing slash or by case',
    async (method, path) => {
      expect(await ask(method, path)).toEqual(UNKNOWN);
    },
  );

  const unlisted = Object.entries(DOCUMENT.paths).flatMap(([template, item]) =>
    METHODS.filter((method) => item[method] === undefined).map(
      (method) => [method.toUpperCase(), template] as const,
    ),
  );
  it.each(unlisted)(
    'answers UnknownRoute to %s %s, a method the document does not list there',
    async (method, template) => {
      expect(await ask(method, concrete(template))).toEqual(UNKNOWN);
    },
  );

  const listed = Object.entries(DOCUMENT.paths).flatMap(([template, item]) =>
    (['head', 'options'] as const)
      .filter((method) => item[method] !== undefined)
      .map((method) => [method.toUpperCase(), template, item[method]?.responses ?? {}] as const),
  );
  it.each(listed)('answers %s %s as the document lists it', async (method, template, responses) => {
    const { status } = await ask(method, concrete(template));
    expect(Object.keys(responses)).toContain(String(status));
  });

  it('lists HEAD and OPTIONS where the broker answers them', () => {
    expect(listed.length).toBeGreaterThan(0);
    expect(unlisted.filter(([method]) => method === 'HEAD' || method === 'OPTIONS')).not.toEqual(
      [],
    );
  });
});
