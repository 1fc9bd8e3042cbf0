/** Maps that evict: a cap on a Map's size, kept by deleting its oldest entries (`trimOldest`). */

/**
 * Where each evicting Map's eviction has got to: a live iterator over its keys, in insertion order.
 * A Map keeps its deleted slots until it grows or shrinks, and a fresh `keys()` walks past every
 * one of them; this iterator walks past each only once.
 */
const cursors = new WeakMap<Map<unknown, unknown>, Iterator<unknown>>();

/**
 * Deletes `map`'s oldest entries (by insertion; move an entry to the end by deleting and setting it
 * again) until it holds at most `max`. O(1) per entry deleted: evicting with a fresh `keys()` each
 * time costs a walk over every slot deleted since the map last rehashed, which grew to 137 µs a
 * key for a full map of 100,000 churning keys (test/bench/evict.ts).
 */
export function trimOldest<K>(map: Map<K, unknown>, max: number): void {
  while (map.size > max) {
    let cursor = cursors.get(map) as Iterator<K> | undefined;
    let next = cursor?.next();
    if (cursor === undefined || next === undefined || next.done === true) {
      // New, or run to the end (everything it had seen is gone): start again at the oldest.
      cursor = map.keys();
      cursors.set(map, cursor);
      next = cursor.next();
      if (next.done === true) return;
    }
    map.delete(next.value);
  }
}
