import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { openLoop, openLoopInterleaved } from '../bench/loadgen.ts';

/** The bench's open-loop generator, against plain servers that count what reaches them. */
const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((done) => s.close(done))));
});

async function counting(status: number): Promise<{ origin: string; paths: string[] }> {
  const paths: string[] = [];
  const server = createServer((req, res) => {
    paths.push(req.url ?? '');
    res.statusCode = status;
    res.end('{}');
  });
  servers.push(server);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, paths };
}

const targets = (name: string) => [0, 1, 2].map((i) => ({ path: `/${name}/${i}`, token: 't' }));

describe('the open-loop generator', () => {
  it('sends each variant its share in turns, its warm-up turn sent but not counted', async () => {
    const [a, b] = [await counting(200), await counting(503)];
    const [first, second] = await openLoopInterleaved({
      variants: [
        { origin: a.origin, targets: targets('a') },
        { origin: b.origin, targets: targets('b') },
      ],
      rate: 400,
      seconds: 0.25,
      sliceMs: 50,
      warmupMs: 25,
    });
    // 100 counted each, after a warm-up turn of 10.
    expect(first).toMatchObject({ sent: 100, completed: 100, errors: 0 });
    expect(second).toMatchObject({ sent: 100, completed: 100, errors: 100 });
    expect(a.paths).toHaveLength(110);
    expect(b.paths).toHaveLength(110);
    // Each rotates over its own targets only.
    expect(new Set(a.paths)).toEqual(new Set(['/a/0', '/a/1', '/a/2']));
    expect(new Set(b.paths)).toEqual(new Set(['/b/0', '/b/1', '/b/2']));
    expect(first!.p99Ms).toBeGreaterThanOrEqual(first!.p50Ms);
  });

  it('back to back, gives each variant its warm-up right before its share', async () => {
    const [a, b] = [await counting(200), await counting(200)];
    const results = await openLoopInterleaved({
      variants: [
        { origin: a.origin, targets: targets('a') },
        { origin: b.origin, targets: targets('b') },
      ],
      rate: 400,
      seconds: 0.1,
      sliceMs: 100,
      warmupMs: 25,
    });
    expect(results.map((r) => r.completed)).toEqual([40, 40]);
    expect([a.paths.length, b.paths.length]).toEqual([50, 50]);
  });

  it('counts every request of a single variant, and a server that is gone as errors', async () => {
    const a = await counting(200);
    expect(
      await openLoop({ origin: a.origin, targets: targets('a'), rate: 400, seconds: 0.1 }),
    ).toMatchObject({ sent: 40, completed: 40, errors: 0 });
    expect(a.paths).toHaveLength(40);
    const gone = await openLoop({
      origin: 'http://127.0.0.1:9',
      targets: targets('a'),
      rate: 400,
      seconds: 0.05,
    });
    expect(gone).toMatchObject({ sent: 20, completed: 0, errors: 20 });
  });
});
