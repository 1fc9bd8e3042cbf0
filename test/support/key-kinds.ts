/**
 * The storage key parser: what a key name says (its hash tag, session, kind) and which names
 * docs/architecture.md's "Storage keys" documents. The storage keys check (storage-keys.ts), the
 * bench's survey (test/bench/layout.ts) and the soak read keys through it.
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
