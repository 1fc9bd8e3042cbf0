/**
 * Waits for a condition on something outside this process (Redis accepting connections again, a
 * broker noticing it, a lease running out in Redis), checking every `intervalMs` until
 * `deadlineMs`. Never a way to let a race in the system under test go one way.
 */
export async function until(
  condition: () => boolean | Promise<boolean>,
  options: { deadlineMs?: number; intervalMs?: number; what: string },
): Promise<void> {
  const deadline = Date.now() + (options.deadlineMs ?? 10_000);
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${options.what}`);
    await new Promise<void>((resolve) => setTimeout(resolve, options.intervalMs ?? 25));
  }
}

/** Milliseconds `work` took, with its result. */
export async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await work();
  return { ms: performance.now() - started, value };
}
