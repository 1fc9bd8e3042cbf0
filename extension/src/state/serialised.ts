/**
 * A stored value with serialised read-modify-write: concurrent updates (the flow, a refresh, the
 * UI) each see the previous one's result instead of overwriting it.
 */
export interface SerialisedStore<T> {
  read(): Promise<T>;
  update(change: (value: T) => T): Promise<T>;
}

export function serialisedStore<T>(
  read: () => Promise<T>,
  /** Writes `value`, read-modified from `previous` (what `read` gave). */
  write: (value: T, previous: T) => Promise<void>,
): SerialisedStore<T> {
  let queue: Promise<unknown> = Promise.resolve();
  return {
    read,
    update(change) {
      const next = queue.then(async () => {
        const previous = await read();
        const updated = change(previous);
        await write(updated, previous);
        return updated;
      });
      queue = next.catch(() => undefined);
      return next;
    },
  };
}
