import { randomUUID } from 'node:crypto';

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

/**
 * Resolves once the broker at `url` has written out every log line it logged before the call: it
 * asks /healthz under a marked request id and waits until `written` finds that request's access
 * line, which comes out after all of them. The broker gathers its lines and writes them a quarter
 * second late at most (server/src/ops/logger.ts), so a check that a line is *not* in a running
 * broker's log, or one read right after the action, comes after this.
 */
export async function untilLogWritten(
  url: string,
  written: (marker: string) => boolean | Promise<boolean>,
): Promise<void> {
  const marker = `log-written-${randomUUID()}`;
  await fetch(`${url}/healthz`, { headers: { 'x-request-id': marker } }).then((response) =>
    response.body?.cancel(),
  );
  await until(() => written(marker), { what: `the log of ${url} to be written out` });
}

/** `untilLogWritten` for a broker process whose lines the test captures. */
export async function logWritten(broker: { url: string; lines: readonly string[] }): Promise<void> {
  const from = broker.lines.length;
  await untilLogWritten(broker.url, (marker) =>
    broker.lines.slice(from).some((line) => line.includes(marker)),
  );
}
