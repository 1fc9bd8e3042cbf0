import { createClient } from 'redis';
import { dumpRedis } from './leaks.ts';

/** Recognisable prefixes of every value the sandbox issues (and of its client secrets). */
export const CANARY_PREFIX = /sbx_(?:code|at|rt|secret)_/;

/**
 * What a hardening run did and what got through, plus everything it must grep at the end: every
 * log line of every process (by source) and every Redis it started. One per suite.
 */
export class Ledger {
  hostileTried = 0;
  hostileAccepted = 0;
  faultsInjected = 0;
  connectionsLost = 0;
  readonly accepted: string[] = [];
  readonly lost: string[] = [];
  readonly #logs = new Map<string, () => readonly string[]>();
  readonly #redis = new Map<string, string>();
  readonly #secrets = new Set<() => readonly string[]>();

  /** One hostile input; `accepted` when any of its invariants failed. Returns `accepted`. */
  hostile(name: string, accepted: boolean): boolean {
    this.hostileTried++;
    if (accepted) {
      this.hostileAccepted++;
      this.accepted.push(name);
    }
    return accepted;
  }

  fault(_name: string, count = 1): void {
    this.faultsInjected += count;
  }

  /** A connection that should still be connected is not. */
  connectionLost(name: string): void {
    this.connectionsLost++;
    this.lost.push(name);
  }

  /** A source of log lines, read when the suite greps (a live array or a getter). */
  logs(name: string, lines: () => readonly string[]): void {
    this.#logs.set(name, lines);
  }

  redis(name: string, url: string): void {
    this.#redis.set(name, url);
  }

  /** Secrets to look for besides the prefixes: a sandbox's control.secrets, say. */
  secrets(list: () => readonly string[]): void {
    this.#secrets.add(list);
  }

  logLines(): { source: string; line: string }[] {
    return [...this.#logs].flatMap(([source, lines]) => lines().map((line) => ({ source, line })));
  }

  /** Every place a canary was found: log lines and Redis values, with where. */
  async canaries(): Promise<{
    found: string[];
    secrets: number;
    logLines: number;
    values: number;
  }> {
    const secrets = new Set([...this.#secrets].flatMap((list) => list()));
    const found: string[] = [];
    const check = (where: string, text: string) => {
      if (CANARY_PREFIX.test(text)) found.push(`${where}: ${text.slice(0, 300)}`);
      else for (const secret of secrets) if (text.includes(secret)) found.push(`${where}: secret`);
    };
    const lines = this.logLines();
    for (const { source, line } of lines) check(`log ${source}`, line);
    let values = 0;
    for (const [name, url] of this.#redis) {
      for (const value of await dumpRedis(url)) {
        values++;
        check(`redis ${name}`, value);
      }
    }
    return { found, secrets: secrets.size, logLines: lines.length, values };
  }

  summary(): string {
    return [
      'Hardening summary',
      `  hostile inputs tried:    ${this.hostileTried}`,
      `  hostile inputs accepted: ${this.hostileAccepted}${this.accepted.length ? ` (${this.accepted.join('; ')})` : ''}`,
      `  faults injected:         ${this.faultsInjected}`,
      `  connections lost:        ${this.connectionsLost}${this.lost.length ? ` (${this.lost.join('; ')})` : ''}`,
    ].join('\n');
  }
}

/** Keys of a Redis that carry no TTL (every key the broker writes must expire). */
export async function keysWithoutTtl(url: string): Promise<string[]> {
  const client = createClient({ url });
  await client.connect();
  try {
    const missing: string[] = [];
    for await (const batch of client.scanIterator({ COUNT: 500 })) {
      for (const key of batch) if ((await client.pTTL(key)) === -1) missing.push(key);
    }
    return missing;
  } finally {
    await client.close();
  }
}

/** Captures what this process writes through console (the in-process sandbox's only log). */
export function captureConsole(): { lines: string[]; restore(): void } {
  const lines: string[] = [];
  const methods = ['log', 'info', 'warn', 'error', 'debug'] as const;
  const originals = methods.map((method) => console[method]);
  for (const method of methods) {
    const original = console[method];
    console[method] = (...args: unknown[]) => {
      lines.push(
        args
          .map((arg) => (arg instanceof Error ? (arg.stack ?? arg.message) : String(arg)))
          .join(' '),
      );
      original.apply(console, args);
    };
  }
  return {
    lines,
    restore() {
      methods.forEach((method, index) => (console[method] = originals[index]!));
    },
  };
}
