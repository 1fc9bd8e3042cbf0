/**
 * Preloaded by gc.ts --seed (with --expose-gc): SIGUSR2 runs three full collections 300 ms apart.
 * A full collection promotes every young object still alive, so those of the calls in flight; a
 * process whose young collections stay long afterwards keeps calls alive through old objects (see
 * docs/performance.md, "What kept calls alive").
 */
const collect = (globalThis as { gc?: () => void }).gc;
if (collect) {
  process.on('SIGUSR2', () => {
    for (let i = 0; i < 3; i++) setTimeout(collect, 300 * i);
  });
}
