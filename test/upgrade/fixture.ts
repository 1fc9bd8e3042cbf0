import type { IssuedTokens } from '@baton/sandbox';
import { readFileSync } from 'node:fs';
import type { StoredKey } from './keyspace.ts';

/** A connection as the extension holds it, and the status it had when the Redis was recorded. */
export interface RecordedConnection {
  id: string;
  license: string;
  status: 'connected' | 'disconnected';
}

/** One API session of the recording: what the extension holds, and what waits for delivery. */
export interface RecordedSession {
  /** What the recording did with it. */
  story: string;
  token: string;
  /** The user signed out: the token no longer opens anything. */
  signedOut: boolean;
  connections: RecordedConnection[];
  /** Its events not yet delivered (the receiver answered 503), in the order they happened. */
  events: { type: string; connection?: string }[];
  /** Its events the release gave up on (24 h of refusals), as its dead letters. */
  deadLetters: { type: string; connection?: string }[];
}

/**
 * A Redis written by an earlier release, with what a test needs to start a later release on it:
 * the settings that carry over (the same secrets and client), the sandbox's tokens, and what the
 * extension holds. Written by record.ts, read by upgrade.test.ts. Sandbox tokens and test secrets
 * only.
 */
export interface Fixture {
  /** The release that wrote it, and its commit. */
  release: string;
  revision: string;
  /** Date.now() when the keys were read: the clock the records' times are on. */
  recordedAt: number;
  /** The brokers' public origin (the sandbox knows its callback under it). */
  publicUrl: string;
  /** Where the sandbox answered: every record's api_url is under it. */
  sandboxUrl: string;
  /** CLIENT_ID, CLIENT_SECRET, SESSION_SECRET, TOKEN_ENCRYPTION_KEYS, EVENTS_WEBHOOK_SECRET. */
  env: Record<string, string>;
  sessions: RecordedSession[];
  tokens: IssuedTokens;
  keys: StoredKey[];
}

/** The fixture of `release`, which must exist and hold keys: no test passes without its data. */
export function loadFixture(release: string): Fixture {
  const fixture = JSON.parse(
    readFileSync(new URL(`./fixtures/${release}.json`, import.meta.url), 'utf8'),
  ) as Fixture;
  if (fixture.keys.length === 0 || fixture.sessions.length === 0)
    throw new Error(`the fixture of ${release} holds no keys or sessions: record it again`);
  return fixture;
}
