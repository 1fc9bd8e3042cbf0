/**
 * Baseline (b): the floor a Node proxy cannot go below. A bare node:http server that forwards
 * `/connections/<anything>/api/<path>` to `${UPSTREAM_API_URL}/<path>` through an undici Pool with
 * one fixed access token, streaming the answer back. No Redis, no session, no decryption, no
 * logging, no Express. It streams the answer with the broker's own `exchange`, so that the two
 * differ by what the broker adds, not by how they copy bytes.
 */
import { createServer } from 'node:http';
import { Pool } from 'undici';
import { exchange } from '../../server/src/connections/upstream.ts';

const apiUrl = new URL(process.env.UPSTREAM_API_URL ?? '');
const token = process.env.UPSTREAM_TOKEN ?? '';
const port = Number(process.env.PORT ?? 0);
const base = apiUrl.pathname.replace(/\/$/, '');
const pool = new Pool(apiUrl.origin, { connections: 256, keepAliveTimeout: 10_000 });
const always = (): boolean => true;
const ignore = (): void => {};
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
    await exchange(
      pool,
      {
        path: `${base}/${rest}`,
        method: 'GET',
        headers: { authorization: `Bearer ${token}`, 'user-agent': 'bare-proxy' },
      },
      res,
      always,
      ignore,
    );
  } catch {
    res.statusCode = 502;
    res.end();
  }
});
server.keepAliveTimeout = 65_000;
server.listen(port, '127.0.0.1');
// Exit as a process does on its own, so that `--cpu-prof` (profile.ts) writes its profile.
process.once('SIGTERM', () => process.exit(0));
