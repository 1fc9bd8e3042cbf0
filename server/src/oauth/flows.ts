import type { Locale } from '@baton/shared';

/**
 * An authorization started at /auth/start and not yet finished, kept in the authorization
 * window's cookie session (express-session), never in the extension.
 */
export interface PendingFlow {
  state: string;
  redirectUri: string;
  /** The extension's PKCE challenge, carried into the handoff. */
  challenge: string;
  locale: Locale;
  createdAt: number;
}

/** How long a pending flow lives: the authorization window's session lasts as long. */
export const FLOW_TTL_MS = 10 * 60 * 1000;

/** Pending flows one browser may hold at once (tabs); the oldest give way. */
export const MAX_PENDING_FLOWS = 5;

/** The flows still alive at `now`, oldest first. */
export function livePending(flows: readonly PendingFlow[] | undefined, now: number): PendingFlow[] {
  return (flows ?? []).filter((flow) => now - flow.createdAt < FLOW_TTL_MS);
}
