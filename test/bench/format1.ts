/**
 * The bench's sessions rewritten as data format 1 (release 0.1.0) left them, so that compare.ts
 * can run a revision before format 2 beside this one on the same sessions: a session as an object
 * of named fields, its connection ids as a set, a record as a hash {v, d} whose sealed value holds
 * its id. This checkout's broker reads all three (store/format.ts); a call rewrites none of them
 * (records change on a refresh, id sets on a renewal: neither comes within an hour).
 */
import { keys } from '@baton/server';
import { createSealer, parseKeyring } from '../../server/src/base/crypto.ts';
import type { BenchStack, Session } from './stack.ts';

export async function asFormat1(stack: BenchStack, sessions: readonly Session[]): Promise<void> {
  const redis = stack.redisClient;
  const sealer = createSealer(parseKeyring(stack.key));
  for (const { sid, connectionId } of sessions) {
    const loaded = await stack.repo.load(sid, connectionId);
    if (!loaded) throw new Error('a bench session lost its record');
    const [session, ttl] = [
      await redis.get(keys.session(sid)),
      await redis.pTTL(keys.session(sid)),
    ];
    const [createdAt, renewedAt, expiresAt] = JSON.parse(session!) as number[];
    const record = keys.connection(sid, connectionId);
    const ids = keys.connectionIds(sid);
    await redis
      .multi()
      .set(
        keys.session(sid),
        JSON.stringify({
          created_at: createdAt,
          ...(renewedAt ? { renewed_at: renewedAt } : {}),
          expires_at: expiresAt,
        }),
        { PX: ttl },
      )
      .del([ids, record])
      .sAdd(ids, connectionId)
      .pExpire(ids, ttl)
      .hSet(record, {
        v: String(loaded.version),
        d: sealer.seal(JSON.stringify(loaded.record), `connection:${sid}:${connectionId}`),
      })
      .pExpire(record, ttl)
      .exec();
  }
}
