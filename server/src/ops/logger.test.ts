import { closeSync, mkdtempSync, openSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { batchedOutput } from './logger.ts';

describe('batchedOutput: lines in batches of 4 KiB, or every 250 ms', () => {
  const file = join(mkdtempSync(join(tmpdir(), 'baton-log-')), 'out.log');
  const read = () => readFileSync(file, 'utf8');
  afterEach(() => vi.useRealTimers());

  it('keeps a short line until the interval, then writes it', async () => {
    vi.useFakeTimers({ toFake: ['setInterval'] });
    const fd = openSync(file, 'w');
    const out = batchedOutput(fd);
    out.write('{"msg":"one"}\n');
    expect(read()).toBe('');
    vi.advanceTimersByTime(250);
    await vi.waitFor(() => expect(read()).toBe('{"msg":"one"}\n'));
    out.write('{"msg":"two"}\n');
    vi.advanceTimersByTime(250);
    await vi.waitFor(() => expect(read()).toBe('{"msg":"one"}\n{"msg":"two"}\n'));
    closeSync(fd);
  });

  it('writes at once what reaches 4 KiB, without waiting for the interval', async () => {
    vi.useFakeTimers({ toFake: ['setInterval'] });
    const fd = openSync(file, 'w');
    const out = batchedOutput(fd);
    const line = `{"msg":"${'x'.repeat(1000)}"}\n`;
    for (let i = 0; i < 5; i++) out.write(line);
    await vi.waitFor(() => expect(read().length).toBeGreaterThanOrEqual(4096));
    closeSync(fd);
  });
});
