/**
 * The keys of data format 1 (release 0.1) that format 2 spreads over shards (../keys.ts): one key
 * each for every session, read only by the upgrade that moves them into the shards (./moves.ts)
 * and empties them. Gone with this folder.
 */
export const format1Keys = {
  /** The one connections index: members `sid:id`, scored by expiry. */
  connectionIndex: (status: 'connected' | 'disconnected') => `baton:{stats}:connections:${status}`,
  /** The one schedule of sessions whose outbox is due, scored by when. */
  eventsDue: 'baton:{events}:due',
  /** The one list of dead letters, oldest first. */
  deadLetters: 'baton:{events}:dead',
} as const;
