/**
 * Baseline (b): the floor a Node proxy cannot go below. A bare node:http server that forwards
 * `/connections/<anything>/api/<path>` to `${UPSTREAM_API_URL}/<path>` through an undici Pool with
 * one fixed access token, streaming the answer back. No Redis, no session, no decryption, no
 * logging, no Express. It streams the answer with the broker's own `relay`, so that the two differ
 * by what the broker adds, not by how they copy bytes.
 */
import { createServer } from 'node:http';
import { Pool } from 'undici';
import { relay } from '../../server/src/connections/proxy.ts';

const apiUrl = new URL(process.env.UPSTREAM_API_URL ?? '');
const token = process.env.UPSTREAM_TOKEN ?? '';
const port = Number(process.env.PORT ?? 0);
const base = apiUrl.pathname.replace(/\/$/, '');
const pool = new Pool(apiUrl.origin, { connections: 256, keepAliveTimeout: 10_000 });
const PREFIX = /^\/connections\/[^/]+\/api\/(.*)$/s;

const server = createServer(async (req, res) => {
  if (req.url === '/healthz') {
    res.end('ok');
    return;
  }
  const rest = PREFIX.exec(req.url ?? '')?.[1];
  if (rest === undefined) {
    res.statusCode = 404;
    res.end();
    return;
  }
  try {
    const upstream = await pool.request({
      path: `${base}/${rest}`,
      method: 'GET',
      headers: { authorization: `Bearer ${token}`, 'user-agent': 'bare-proxy' },
    });
    res.statusCode = upstream.statusCode;
    const type = upstream.headers['content-type'];
    const length = upstream.headers['content-length'];
    if (type !== undefined) res.setHeader('content-type', type);
    if (length !== undefined) res.setHeader('content-length', length);
    res.setHeader('cache-control', 'no-store');
    await relay(upstream.body, res);
  } catch {
    if (!res.headersSent) res.statusCode = 502;
    res.end();
  }
});
server.keepAliveTimeout = 65_000;
server.listen(port, '127.0.0.1');
