import type { ConnectionRepository } from './records.ts';
import type { Sessions } from './sessions.ts';

/**
 * Ends session `sid` (a sign-out, an operator's revocation): the session, its set of connections
 * and each connection's record, refresh lock and back-off go in one store step with the
 * `session.ended` event (all on the session's slot). A store that fails part-way leaves the
 * session whole, for the caller to end again with the same token, never a session gone with its
 * connections' refresh tokens left behind for a month. The connections index follows; entries a
 * failure leaves there only count in the gauge until their record would have expired. Answers the
 * ids of the connections it ended.
 */
export async function endSession(
  deps: { sessions: Sessions; connections: ConnectionRepository },
  sid: string,
  reason: 'signed_out' | 'revoked',
): Promise<string[]> {
  const { sessions, connections } = deps;
  const ids = await connections.ids(sid);
  // The licence index is found by each record's api_url: read before the records go.
  const apiUrls = await connections.apiUrls(sid, ids);
  await sessions.destroy(
    sid,
    { type: 'session.ended', reason, connections: ids },
    connections.keysOf(sid, ids),
  );
  await connections.unindex(sid, ids, apiUrls);
  return ids;
}
