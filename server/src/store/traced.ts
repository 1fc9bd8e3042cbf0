import { SpanKind, type SpanOptions } from '@opentelemetry/api';
import { spanAround } from '../base/tracing.ts';
import type { Store } from './types.ts';

/**
 * The store with a client span per operation (`redis getVersioned`...): the operation's name, never
 * its keys or values. Used only when tracing is on.
 */
export function tracedStore(store: Store): Store {
  const traced: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(store) as [
    string,
    (...args: unknown[]) => Promise<unknown>,
  ][]) {
    const options: SpanOptions = {
      kind: SpanKind.CLIENT,
      attributes: { 'db.system.name': 'redis', 'db.operation.name': name },
    };
    // `close` is not the store's work; `scan` answers an iterable, not a promise, walked later.
    traced[name] =
      name === 'close' || name === 'scan'
        ? method
        : (...args: unknown[]) => spanAround(`redis ${name}`, options, () => method(...args));
  }
  return traced as unknown as Store;
}
