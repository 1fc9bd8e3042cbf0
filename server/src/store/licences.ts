import { indexShard, keys, licenceMember, parseSessionKey, sessionKeyPatterns } from './keys.ts';
import type { Store, Versioned } from './types.ts';

/**
 * The api_url of connection `id` of session `sid`, read from its record as stored (sealed: the
 * store cannot open it; the composition gives the connection repository's `open`). Throws when the
 * record cannot be opened: its key id is no longer configured, or it is corrupt.
 */
export type ApiUrlOf = (record: { sid: string; id: string; stored: Versioned }) => string;

/** A connection record the upgrade could not open: which (no session id), and why. */
export interface Unreadable {
  /** The record's key, its session id left out: `baton:{…}:connection:<id>`. */
  record: string;
  reason: string;
}

/** What the walk needs of the upgrade under way (format.ts). */
export interface LicenceRun {
  store: Store;
  batch: number;
  apiUrlOf: ApiUrlOf;
  unreadable: (unreadable: Unreadable) => void;
  /** `read` the next batch, then `index` it (answering how many it put), until none is left. */
  inBatches: <T>(
    moving: 'licences',
    read: () => Promise<T[]>,
    index: (batch: T[]) => Promise<number>,
  ) => Promise<boolean>;
}

/**
 * Data format 3's licence index built from every connection record (of format 1 or 2, read alike):
 * the keys walked (Store.scan) batch by batch, each record opened for its api_url, and its
 * session's hold of that licence put in the index, to live as long as the session (and so the
 * record) has left. A put made twice changes nothing: an instance stopped anywhere leaves the
 * index partly built, and the next walks again from the start. A record that cannot be opened is
 * counted and left in place (it may open once its key is configured again); a record gone
 * meanwhile, or whose session has gone, is passed over. False once the lease is lost.
 */
export function indexLicences(run: LicenceRun): Promise<boolean> {
  const walk = run.store.scan(sessionKeyPatterns.connection)[Symbol.asyncIterator]();
  let walked = false;
  return run.inBatches(
    'licences',
    async () => {
      const batch: string[] = [];
      while (!walked && batch.length < run.batch) {
        const next = await walk.next();
        if (next.done === true) walked = true;
        else batch.push(next.value);
      }
      return batch;
    },
    async (batch) => {
      // A batch's reads and puts at once: the client pipelines them.
      const put = await Promise.all(batch.map((key) => indexOne(run, key)));
      return put.filter(Boolean).length;
    },
  );
}

/** The licence of the record at `key` into the index: false when there was none to put. */
async function indexOne(run: LicenceRun, key: string): Promise<boolean> {
  const parsed = parseSessionKey(key);
  if (parsed?.kind !== 'connection') return false;
  const { sid, id } = parsed;
  const [stored, session] = await Promise.all([
    run.store.getVersioned(key),
    run.store.getWithTtl(keys.session(sid)),
  ]);
  if (!stored || !session) return false;
  let apiUrl: string;
  try {
    apiUrl = run.apiUrlOf({ sid, id, stored });
  } catch (error) {
    run.unreadable({ record: keys.connection('…', id), reason: (error as Error).message });
    return false;
  }
  await run.store.indexPut(
    keys.licenceIndex(indexShard(sid)),
    licenceMember(apiUrl, sid),
    session.ttlMs,
  );
  return true;
}
