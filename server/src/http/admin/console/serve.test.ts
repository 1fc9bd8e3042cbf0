import express from 'express';
import { once } from 'node:events';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleFiles, consoleRouter } from './serve.ts';

/** The console's router alone, in an app that answers 404 for anything it leaves. */
let server: Server;
let base: string;

beforeAll(async () => {
  const app = express();
  app.use(consoleRouter());
  app.use((_req, res) => {
    res.status(404).end();
  });
  server = createServer(app).listen(0, '127.0.0.1');
  await once(server, 'listening');
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => {
  server.closeAllConnections();
  server.close();
});

const paths = [...consoleFiles().keys()];
const get = async (path: string) => {
  const answer = await fetch(`${base}${path}`);
  return { answer, text: await answer.text() };
};

describe('the admin console router', () => {
  it('serves the page, its stylesheet, its icon, its entry module and every module it imports', () => {
    expect(paths).toEqual(
      expect.arrayContaining([
        '/',
        '/console.css',
        '/console.js',
        '/console/api.js',
        '/console/icon.svg',
      ]),
    );
  });

  it.each(paths)('answers GET %s with its type and the strict headers', async (path) => {
    const { answer, text } = await get(path);
    expect(answer.status).toBe(200);
    expect(text.length).toBeGreaterThan(50);
    const type =
      path === '/'
        ? 'text/html; charset=utf-8'
        : path.endsWith('.css')
          ? 'text/css; charset=utf-8'
          : path.endsWith('.svg')
            ? 'image/svg+xml'
            : 'text/javascript; charset=utf-8';
    expect(answer.headers.get('content-type')).toBe(type);
    expect(answer.headers.get('content-security-policy')).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
    );
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
    expect(answer.headers.get('referrer-policy')).toBe('no-referrer');
  });

  it('leaves every other path to the app (exact case, no trailing slash, nothing below /console/ it does not list)', async () => {
    for (const path of ['/CONSOLE.JS', '/console.js/', '/console/', '/console/x.js', '/index.html'])
      expect((await get(path)).answer.status, path).toBe(404);
  });

  it('refuses to be made when a file is missing: a broken deployment fails at start-up', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'baton-console-'));
    try {
      await mkdir(join(dir, 'console'));
      await writeFile(join(dir, 'console.html'), '<!doctype html>');
      expect(() => consoleRouter({ dir: pathToFileURL(`${dir}/`) })).toThrow(/console\.css/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('the admin console page, as the CSP needs it', () => {
  it('loads script and style from files only: no inline script, style or handler, no base', async () => {
    const { text: html } = await get('/');
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.map(([, attrs]) => attrs?.trim())).toEqual(['type="module" src="/console.js"']);
    expect(scripts.every(([, , body]) => body?.trim() === '')).toBe(true);
    expect(html).not.toMatch(/<style\b|\sstyle=|\son[a-z]+=|<base\b|javascript:/i);
    expect(html).toContain('<link rel="stylesheet" href="/console.css" />');
  });

  it('imports only modules the router serves, by relative paths under this origin', async () => {
    for (const path of paths.filter((each) => each.endsWith('.js'))) {
      const { text } = await get(path);
      for (const [, target] of text.matchAll(/^import[^'"]*['"]([^'"]+)['"]/gm)) {
        const resolved = new URL(target!, `${base}${path}`);
        expect(resolved.origin, `${path} imports ${target}`).toBe(base);
        expect(paths, `${path} imports ${target}`).toContain(resolved.pathname);
      }
    }
  });

  it('never builds markup from data, evaluates code, or uses localStorage', async () => {
    for (const path of paths.filter((each) => each.endsWith('.js'))) {
      const { text } = await get(path);
      expect(text, path).not.toMatch(
        /innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|localStorage\s*[.[]|setTimeout\(\s*['"`]/,
      );
    }
  });
});
