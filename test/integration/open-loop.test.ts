import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { openLoop, openLoopInterleaved, schedule } from '../bench/loadgen.ts';

/** The bench's open-loop generator, against plain servers that count what reaches them. */
const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((done) => s.close(done))));
});

/** How long the counting server holds `/late`. */
const LATE_MS = 1000;

async function counting(status: number): Promise<{ origin: string; paths: string[] }> {
  const paths: string[] = [];
  const server = createServer((req, res) => {
    paths.push(req.url ?? '');
    res.statusCode = status;
    // Answered late, so that its place among the answers can be told.
    if (req.url === '/late') setTimeout(() => res.end('{}'), LATE_MS);
    else res.end('{}');
  });
  servers.push(server);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, paths };
}

const targets = (name: string) => [0, 1, 2].map((i) => ({ path: `/${name}/${i}`, token: 't' }));

describe('the open-loop generator', () => {
  const share = (name: string, origin = 'http://127.0.0.1:9') => ({
    origin,
    targets: targets(name),
  });

  it('gives each variant its warm-up right before its first counted turn', () => {
    const options = { variants: [share('a'), share('b')], rate: 1000, seconds: 0.1, warmupMs: 10 };
    const turns = (sliceMs?: number) =>
      schedule(sliceMs === undefined ? options : { ...options, sliceMs }).map(
        (p) => `${'ab'[p.variant]}${p.counted ? '' : '-warm'}:${p.end}`,
      );
    // Back to back: a's warm-up, a's share, then b's, so that no pool idles between the two.
    expect(turns(100)).toEqual(['a-warm:10', 'a:110', 'b-warm:120', 'b:220']);
    expect(turns()).toEqual(turns(100));
    expect(turns(40)).toEqual([
      'a-warm:10',
      'a:50',
      'b-warm:60',
      'b:100',
      'a:140',
      'b:180',
      'a:200',
      'b:220',
    ]);
  });

  it('sends each variant its share in turns, its warm-up sent but not counted', async () => {
    const [a, b] = [await counting(200), await counting(503)];
    const [first, second] = await openLoopInterleaved({
      variants: [share('a', a.origin), share('b', b.origin)],
      rate: 400,
      seconds: 0.25,
      sliceMs: 50,
      warmupMs: 25,
    });
    // 100 counted each, after a warm-up of 10.
    expect(first).toMatchObject({ sent: 100, completed: 100, errors: 0 });
    expect(second).toMatchObject({ sent: 100, completed: 100, errors: 100 });
    expect(a.paths).toHaveLength(110);
    expect(b.paths).toHaveLength(110);
    // Each rotates over its own targets only.
    expect(new Set(a.paths)).toEqual(new Set(['/a/0', '/a/1', '/a/2']));
    expect(new Set(b.paths)).toEqual(new Set(['/b/0', '/b/1', '/b/2']));
    expect(first!.p99Ms).toBeGreaterThanOrEqual(first!.p50Ms);
    expect(first!.answers).toBeUndefined();
  });

  it('keeps every answer in the order it was due, when asked', async () => {
    const a = await counting(200);
    const before = Date.now();
    const { answers } = await openLoop({
      origin: a.origin,
      targets: ['/late', '/a', '/a'].map((path) => ({ path, token: 't' })),
      rate: 400,
      seconds: 0.1,
      warmupMs: 25,
      keepAnswers: true,
    });
    const latencies = Array.from(answers!.latencies);
    expect(latencies).toHaveLength(40);
    // The warm-up's ten took the first ten targets, so the counted ones start at the second.
    // Told apart by order, not by the host's speed: every late one waited LATE_MS, and the
    // others' median is well under it however busy the host (a second's margin).
    const late = latencies.filter((_, i) => (i + 10) % 3 === 0);
    const others = latencies.filter((_, i) => (i + 10) % 3 !== 0).sort((x, y) => x - y);
    expect(late.every((ms) => ms >= LATE_MS)).toBe(true);
    expect(others[Math.floor(others.length / 2)]).toBeLessThan(LATE_MS);
    // The first counted request was due after the warm-up's ten.
    expect(answers!.firstDueAt).toBeGreaterThan(before + 20);
    expect(answers!.firstDueAt).toBeLessThan(Date.now());
  });

  it('counts every request of a single variant, and a server that is gone as errors', async () => {
    const a = await counting(200);
    expect(await openLoop({ ...share('a', a.origin), rate: 400, seconds: 0.1 })).toMatchObject({
      sent: 40,
      completed: 40,
      errors: 0,
    });
    expect(a.paths).toHaveLength(40);
    const gone = await openLoop({ ...share('a'), rate: 400, seconds: 0.05 });
    expect(gone).toMatchObject({ sent: 20, completed: 0, errors: 20 });
  });
});
