import { afterAll, beforeAll, beforeEach } from 'vitest';
import { expectNoLeaks } from './leaks.ts';
import { startStack, type Stack } from './stack.ts';

/**
 * One stack for a test file: started before its tests, the sandbox's counters, log and faults reset
 * before each, and at the end a grep of Redis and every log line for the sandbox's secrets.
 */
export function useStack(
  receive: (stack: Stack) => unknown,
  options: Parameters<typeof startStack>[0] = {},
): void {
  let stack: Stack | undefined;
  beforeAll(async () => {
    stack = await startStack(options);
    await receive(stack);
  });
  afterAll(async () => {
    if (!stack) return;
    await expectNoLeaks(stack);
    await stack.close();
  });
  beforeEach(() => {
    stack?.sandbox.sandbox.control.reset();
  });
}
