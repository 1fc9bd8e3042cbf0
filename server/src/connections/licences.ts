import { indexShard, keys, LICENCE_SHARDS, licenceMember, licencePrefix } from '../store/keys.ts';
import type { Store } from '../store/types.ts';

/** Shards of the licence index read at once by a lookup. */
const LOOKUP_BATCH = 64;

/**
 * The licence index (store/keys.ts, data format 3): which sessions hold each licence (a
 * connection's api_url), so that an operator finds a licence's connections without opening every
 * record. Kept by records.ts as the status index is: a session's hold of a licence is scored by
 * its record's expiry, put with every write of the record and at every renewal of the session
 * (the record is opened there for its api_url), and removed with the record. Spread by session:
 * a put or a removal touches the session's one shard, a lookup reads them all.
 */
export function createLicenceIndex(store: Store) {
  const at = (sid: string, apiUrl: string) => ({
    key: keys.licenceIndex(indexShard(sid)),
    member: licenceMember(apiUrl, sid),
  });
  return {
    /** Session `sid` holds `apiUrl` for `ttlMs` from now (its record's time left). */
    async put(sid: string, apiUrl: string, ttlMs: number): Promise<void> {
      const { key, member } = at(sid, apiUrl);
      await store.indexPut(key, member, ttlMs);
    },

    async remove(sid: string, apiUrl: string): Promise<void> {
      const { key, member } = at(sid, apiUrl);
      await store.indexRemove(key, member);
    },

    /**
     * Where licence `apiUrl` may be held: every connection of each session the index names for
     * it (every shard read, a few at a time, each answering only that licence's members). The
     * caller opens each and keeps those whose apiUrl is `apiUrl` (a session holds other licences
     * too, and two licences' hashes may collide). A connection written by an older release
     * (format 2, serving while this one upgrades) is found once this release has written it or
     * renewed its session, or once the upgrade has indexed it.
     */
    async holders(apiUrl: string): Promise<{ sid: string; id: string }[]> {
      const prefix = licencePrefix(apiUrl);
      const sids: string[] = [];
      for (let first = 0; first < LICENCE_SHARDS; first += LOOKUP_BATCH) {
        const shards = Array.from(
          { length: Math.min(LOOKUP_BATCH, LICENCE_SHARDS - first) },
          (_, n) => first + n,
        );
        const members = await Promise.all(
          shards.map((shard) => store.indexMembers(keys.licenceIndex(shard), prefix)),
        );
        sids.push(...members.flat().map((member) => member.slice(prefix.length)));
      }
      const held = await Promise.all(
        sids.map(async (sid) =>
          (await store.setMembers(keys.connectionIds(sid))).map((id) => ({ sid, id })),
        ),
      );
      return held.flat();
    },
  };
}
