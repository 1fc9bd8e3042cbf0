/**
 * What a Redis holds, read from Redis itself rather than from the broker's key names (which
 * change): every key grouped by kind (its name with the session id and random ids put as
 * placeholders), with its type, TTL and MEMORY USAGE, and the keys that no session's hash tag names
 * (keys shared by sessions: one of them that grows with the sessions caps how far a Cluster
 * spreads them). S6 (s6.ts) reads its figures from here, and the smoke asserts its invariants.
 */
import { kindOf, sessionOf } from '../support/key-kinds.ts';

/** A raw command on the surveyed Redis. */
export type Send = (args: string[]) => Promise<unknown>;

export interface KindFigures {
  kind: string;
  /** `shared` for a key no session's hash tag names, else what `originOf` said of its session. */
  origin: string;
  keys: number;
  /** Types seen in the sample. */
  types: string[];
  withoutTtl: number;
  /** Over every key of the kind that has one. */
  ttlMs: { min: number; max: number } | null;
  /** MEMORY USAGE (every sample counted exactly) over the first `sample` keys of the kind. */
  sampled: number;
  bytes: { mean: number; max: number };
}

export interface SharedKey {
  kind: string;
  type: string;
  bytes: number;
  ttlMs: number;
}

export interface Layout {
  keys: number;
  /** Distinct session ids among the keys' hash tags. */
  sessions: number;
  kinds: KindFigures[];
  /** The largest keys shared by sessions, largest first (exact MEMORY USAGE). */
  largestShared: SharedKey[];
}

/**
 * Every key of the Redis behind `send` (SCAN), grouped by origin and kind. `originOf` names a
 * session's origin (say `real` or `made`); `sample` keys of each kind are sized exactly, and every
 * shared key is sized (estimated, then the largest `top` exactly).
 */
export async function surveyKeys(
  send: Send,
  options: { originOf?: (sid: string) => string; sample?: number; top?: number } = {},
): Promise<Layout> {
  const { originOf = () => 'session', sample = 50, top = 5 } = options;
  const kinds = new Map<string, KindFigures & { bytesSum: number }>();
  const sessions = new Set<string>();
  const shared: { key: string; bytes: number }[] = [];
  let total = 0;
  let cursor = '0';
  do {
    const [next, batch] = (await send(['SCAN', cursor, 'COUNT', '2000'])) as [string, string[]];
    cursor = String(next);
    total += batch.length;
    await Promise.all(
      batch.map(async (key) => {
        const sid = sessionOf(key);
        if (sid !== undefined) sessions.add(sid);
        const origin = sid === undefined ? 'shared' : originOf(sid);
        const kind = kindOf(key);
        const name = `${origin} ${kind}`;
        let figures = kinds.get(name);
        if (!figures) {
          figures = {
            kind,
            origin,
            keys: 0,
            types: [],
            withoutTtl: 0,
            ttlMs: null,
            sampled: 0,
            bytes: { mean: 0, max: 0 },
            bytesSum: 0,
          };
          kinds.set(name, figures);
        }
        figures.keys++;
        const sized = figures.sampled < sample;
        if (sized) figures.sampled++;
        const [ttl, type, bytes] = await Promise.all([
          send(['PTTL', key]) as Promise<number>,
          sized ? (send(['TYPE', key]) as Promise<string>) : undefined,
          sized || sid === undefined
            ? (send(['MEMORY', 'USAGE', key, ...(sized ? ['SAMPLES', '0'] : [])]) as Promise<
                number | null
              >)
            : undefined,
        ]);
        if (ttl === -2) return; // gone meanwhile (a one-time value redeemed, a limit's window)
        if (ttl === -1) figures.withoutTtl++;
        else
          figures.ttlMs = {
            min: Math.min(figures.ttlMs?.min ?? Infinity, ttl),
            max: Math.max(figures.ttlMs?.max ?? 0, ttl),
          };
        if (type !== undefined && !figures.types.includes(String(type)))
          figures.types.push(String(type));
        if (sized && bytes !== undefined && bytes !== null) {
          figures.bytesSum += Number(bytes);
          figures.bytes.max = Math.max(figures.bytes.max, Number(bytes));
        }
        if (sid === undefined) shared.push({ key, bytes: Number(bytes ?? 0) });
      }),
    );
  } while (cursor !== '0');
  shared.sort((a, b) => b.bytes - a.bytes);
  const largestShared = await Promise.all(
    shared.slice(0, top).map(async ({ key }) => {
      const [type, bytes, ttlMs] = await Promise.all([
        send(['TYPE', key]),
        send(['MEMORY', 'USAGE', key, 'SAMPLES', '0']),
        send(['PTTL', key]),
      ]);
      return { kind: kindOf(key), type: String(type), bytes: Number(bytes), ttlMs: Number(ttlMs) };
    }),
  );
  largestShared.sort((a, b) => b.bytes - a.bytes);
  return {
    keys: total,
    sessions: sessions.size,
    kinds: [...kinds.values()]
      .map(({ bytesSum, ...figures }) => ({
        ...figures,
        bytes: {
          mean: figures.sampled > 0 ? bytesSum / figures.sampled : 0,
          max: figures.bytes.max,
        },
      }))
      .sort((a, b) => (a.origin + a.kind).localeCompare(b.origin + b.kind)),
    largestShared,
  };
}
