/**
 * S4, what is measured: the extension cannot be pointed at the upstream directly, so a plain
 * page stands in for the popup. Each "open" is a new incognito-like browser context (no cached
 * connections, so every fetch pays its TCP connect, as a cold popup does) loading a page from a
 * loopback origin; in it, `fetch` + `json()` of users.me through the broker (session token) and
 * straight from the upstream (access token), in alternating order. Chromium runs with
 * --disable-web-security because neither server sends CORS headers (the extension is exempt by
 * its host permissions). Time to data = performance.now() around fetch + json in the page.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium } from 'playwright-core';
import { spread, type Spread } from './scenarios.ts';
import { LICENSE, type BenchStack, type Session } from './stack.ts';

export interface S4Result {
  opens: number;
  brokerMs: Spread;
  directMs: Spread;
  diffMs: Spread;
  failures: number;
}

const PAGE = `<!doctype html><meta charset="utf-8"><title>popup</title><body>
<script>
window.timeToData = async (url, token) => {
  const t0 = performance.now();
  const response = await fetch(url, { headers: { authorization: 'Bearer ' + token }, cache: 'no-store' });
  const data = await response.json();
  const ms = performance.now() - t0;
  return { ms, status: response.status, ok: typeof data === 'object' };
};
</script>`;

export async function s4(stack: BenchStack, session: Session, opens: number): Promise<S4Result> {
  const server = createServer((_req, res) => {
    res.setHeader('content-type', 'text/html');
    res.end(PAGE);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const pageUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/popup.html`;
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-web-security', '--no-first-run'],
  });
  const viaBroker = {
    url: `${stack.brokers[0]!.url}/connections/${session.connectionId}/api/users.me`,
    token: session.token,
  };
  const direct = {
    url: `${stack.sandbox.url}/licenses/${LICENSE}/users.me`,
    token: session.accessToken,
  };
  const brokerMs: number[] = [];
  const directMs: number[] = [];
  const diffs: number[] = [];
  let failures = 0;
  try {
    for (let open = -3; open < opens; open++) {
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(pageUrl);
      const order = open % 2 === 0 ? [viaBroker, direct] : [direct, viaBroker];
      const times = new Map<string, number>();
      for (const target of order) {
        const result = await page.evaluate(
          ([url, token]) =>
            (
              window as unknown as {
                timeToData(u: string, t: string): Promise<{ ms: number; status: number }>;
              }
            ).timeToData(url, token),
          [target.url, target.token] as const,
        );
        if (result.status !== 200) failures++;
        times.set(target.url, result.ms);
      }
      await context.close();
      if (open < 0) continue; // warm-up opens
      const b = times.get(viaBroker.url)!;
      const d = times.get(direct.url)!;
      brokerMs.push(b);
      directMs.push(d);
      diffs.push(b - d);
    }
  } finally {
    await browser.close();
    server.close();
  }
  return {
    opens,
    brokerMs: spread(brokerMs),
    directMs: spread(directMs),
    diffMs: spread(diffs),
    failures,
  };
}
