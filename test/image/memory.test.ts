import { describe, expect, it } from 'vitest';
import { docker, IMAGE } from './docker.ts';

/**
 * V8's heap in the image follows the container's memory limit (server/docker/entrypoint.sh;
 * docs/operations.md, "Memory"): the old space takes 75 % of it, the young generation (which V8
 * sizes from the same limit) comes on top, and the whole stays under the limit, so that V8
 * collects before the OOM killer strikes. Read from a `node` that the image's entrypoint starts as
 * it starts the broker (the command replaced, the entrypoint kept), on a real Docker engine.
 */
const SHARE = 0.75;

interface Heap {
  /** NODE_OPTIONS as the entrypoint left it. */
  options: string | null;
  /** v8.getHeapStatistics().heap_size_limit, MiB: the old space and the young generation. */
  limitMiB: number;
}

const PRINT_HEAP =
  'JSON.stringify({ options: process.env.NODE_OPTIONS ?? null, limitMiB: v8.getHeapStatistics().heap_size_limit / 2 ** 20 })';

async function heap(options: {
  memoryMiB?: number;
  nodeOptions?: string;
  /** Node alone, without the image's entrypoint: Node's own default. */
  bare?: boolean;
}): Promise<Heap> {
  const output = await docker([
    'run',
    '--rm',
    '--network',
    'host',
    ...(options.memoryMiB === undefined ? [] : ['--memory', `${options.memoryMiB}m`]),
    ...(options.nodeOptions === undefined ? [] : ['--env', `NODE_OPTIONS=${options.nodeOptions}`]),
    ...(options.bare ? ['--entrypoint', 'node', IMAGE] : [IMAGE, 'node']),
    '-p',
    PRINT_HEAP,
  ]);
  return JSON.parse(output) as Heap;
}

describe('the heap in the broker image', () => {
  it.each([256, 768, 1024])(
    'gives the old space three quarters of a %i MiB limit, and stays under the limit',
    async (memoryMiB) => {
      const { options, limitMiB } = await heap({ memoryMiB });
      const oldSpaceMiB = Math.floor(memoryMiB * SHARE);
      expect(options).toBe(`--max-old-space-size=${oldSpaceMiB}`);
      // The young generation on top: 3 MiB at 256, 48 MiB at 768 and 1,024 (V8's sizing).
      expect(limitMiB).toBeGreaterThan(oldSpaceMiB);
      expect(limitMiB).toBeLessThanOrEqual(memoryMiB * 0.85);
    },
  );

  it("keeps Node's default when the container has no memory limit", async () => {
    const [entrypoint, bare] = await Promise.all([heap({}), heap({ bare: true })]);
    expect(entrypoint).toEqual({ options: null, limitMiB: bare.limitMiB });
  });

  it("leaves an integrator's NODE_OPTIONS that sizes the heap alone, and keeps the rest of one that does not", async () => {
    const sized = await heap({
      memoryMiB: 1024,
      nodeOptions: '--enable-source-maps --max-old-space-size=300',
    });
    expect(sized.options).toBe('--enable-source-maps --max-old-space-size=300');
    expect(sized.limitMiB).toBeLessThan(400);
    const byShare = await heap({
      memoryMiB: 1024,
      nodeOptions: '--max-old-space-size-percentage=50',
    });
    expect(byShare.options).toBe('--max-old-space-size-percentage=50');
    expect(byShare.limitMiB).toBeLessThan(600);
    const other = await heap({ memoryMiB: 256, nodeOptions: '--enable-source-maps' });
    expect(other.options).toBe('--max-old-space-size=192 --enable-source-maps');
  });
});
