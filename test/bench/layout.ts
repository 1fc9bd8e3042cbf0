/**
 * What a Redis holds, read from Redis itself rather than from the broker's key names (which
 * change): every key grouped by kind (its name with the session id and random ids put as
 * placeholders), with its type, TTL and MEMORY USAGE, and the keys that no session's hash tag names
 * (keys shared by sessions: one of them that grows with the sessions caps how far a Cluster
 * spreads them). S6 (s6.ts) reads its figures from here, and the smoke asserts its invariants.
 */
import { readFileSync } from 'node:fs';

/** A session id as the broker makes it: the base64url SHA-256 of a session token. */
const SESSION_ID = /^[A-Za-z0-9_-]{43}$/;

/** A key's hash tag as Redis Cluster reads it: between the first `{` and the next `}`, if any. */
export function hashTag(key: string): string | undefined {
  const open = key.indexOf('{');
  if (open < 0) return undefined;
  const close = key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : undefined;
}

/** The session a key belongs to (its hash tag is a session id), or undefined for a shared key. */
export function sessionOf(key: string): string | undefined {
  const tag = hashTag(key);
  return tag !== undefined && SESSION_ID.test(tag) ? tag : undefined;
}

/**
 * A key's kind: its name with the session id as `{sid}`, random ids (16 or more base64url
 * characters with a digit or a capital) as `<id>`, IPv4 addresses as `<ip>` and numbers as `<n>`.
 */
export function kindOf(key: string): string {
  const sid = sessionOf(key);
  const named = sid === undefined ? key : key.replace(`{${sid}}`, '{sid}');
  return named
    .replace(/[A-Za-z0-9_-]{16,}/g, (run) => (/[A-Z0-9]/.test(run) ? '<id>' : run))
    .replace(/\d{1,3}(\.\d{1,3}){3}/g, '<ip>')
    .replace(/(?<![A-Za-z])\d+(?![A-Za-z])/g, '<n>');
}

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

/**
 * The key patterns docs/architecture.md documents (its "Storage keys" section, every name in
 * backquotes; one that starts with `:` continues the session prefix before it), as expressions
 * over key names: `{sid}` a session id, `<...>` one name part, `*` and `…` anything.
 */
export function documentedKeys(architectureMd: string): RegExp[] {
  const start = architectureMd.indexOf('## Storage keys');
  if (start < 0) throw new Error('docs/architecture.md has no "Storage keys" section');
  const end = architectureMd.indexOf('\n## ', start + 1);
  const section = architectureMd.slice(start, end < 0 ? undefined : end);
  const patterns: RegExp[] = [];
  let prefix = '';
  for (const [, name = ''] of section.matchAll(/`([^`]+)`/g)) {
    if (!name.startsWith('baton:') && !name.startsWith(':')) continue;
    const full = name.startsWith(':') ? `${prefix}${name}` : name;
    if (!name.startsWith(':')) prefix = full.slice(0, full.indexOf('}') + 1) || prefix;
    const source = full
      .split(/(\{sid\}|<[^>]+>|\*|…)/)
      .map((part) =>
        part === '{sid}'
          ? '\\{[A-Za-z0-9_-]{43}\\}'
          : part.startsWith('<')
            ? '[^:{}]+'
            : part === '*' || part === '…'
              ? '.+'
              : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
      )
      .join('');
    patterns.push(new RegExp(`^${source}$`));
  }
  if (patterns.length === 0) throw new Error('docs/architecture.md documents no key');
  return patterns;
}

/** docs/architecture.md's documented keys, read from this checkout. */
export function documentedKeysHere(): RegExp[] {
  return documentedKeys(
    readFileSync(new URL('../../docs/architecture.md', import.meta.url), 'utf8'),
  );
}

/** Whether a kind's name (kindOf) is documented: its placeholders stand for any value. */
export function isDocumented(kind: string, patterns: readonly RegExp[]): boolean {
  const example = kind
    .replace('{sid}', `{${'s'.repeat(43)}}`)
    .replace(/<id>|<ip>|<n>/g, (placeholder) =>
      placeholder === '<ip>' ? '10.0.0.1' : placeholder === '<n>' ? '7' : 'x'.repeat(22),
    );
  return patterns.some((pattern) => pattern.test(example));
}
