/**
 * The operator's command line, on the broker's own environment (the same Redis settings and
 * TOKEN_ENCRYPTION_KEYS): `node dist/admin.js <command>` in the deployable folder, or
 * `pnpm --filter @baton/server admin <command>` in the repository. A client of the operators' use
 * cases (admin/use-cases.ts), as the admin API is; prints JSON. Acts as `cli:$USER`, an operator.
 *
 *   overview                          the build, Redis, connections, refreshes and events at a glance
 *   stats                             the same, with sessions and records by key id counted (a walk)
 *   find --connection <id> | --session <ses_…> | --licence <api_url> [--limit n]
 *   disconnect <connection id>        mark it disconnected (the user is asked to reconnect)
 *   end-session <ses_…>               end a session and every connection in it
 *   end-licence <api_url>             end every session holding that licence
 *   drop-session <sid> | drop-session --connection <id>
 *                                     end a session named by its id, or the one holding a connection
 *   dead-letters [--reason r] [--limit n]   the newest dead letters
 *   redeliver <event id> | discard <event id>
 *   reencrypt                         seal every record again under the active key; waits, printing progress
 *   events                            what waits for delivery, and the newest dead letters
 *   events sweep                      schedule every outbox in Redis (a SCAN: after instances died)
 *   token <name> <viewer|operator>    a new admin API token, printed once, and its ADMIN_TOKENS_FILE entry
 *
 * Exit status: 0 done, 1 not done (not found, a job that did not finish, keys missing), 2 usage.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { noEvents } from './connections/events.ts';
import { createAdminOverStore, AdminInputError, type AdminService } from './admin/use-cases.ts';
import type { Actor, ConnectionQuery, ReencryptJob } from './admin/types.ts';
import { ConfigError, loadConfig, type Config } from './config/config.ts';
import { newAdminToken } from './http/admin/tokens.ts';
import { readBuildInfo } from './ops/build-info.ts';
import { createOutbox } from './ops/events.ts';
import { createRedis } from './store/redis/clients.ts';
import { createRedisStore } from './store/redis/store.ts';

const USAGE = `usage: admin overview | stats | find --connection <id> | --session <ses_…> | --licence <api_url> [--limit n]
       | disconnect <id> | end-session <ses_…> | end-licence <api_url> | drop-session <sid> | drop-session --connection <id>
       | dead-letters [--reason r] [--limit n] | redeliver <event id> | discard <event id>
       | reencrypt | events [sweep] | token <name> <viewer|operator>`;

class UsageError extends Error {}

const actor: Actor = { name: `cli:${process.env.USER ?? 'unknown'}`, role: 'operator' };

/** `--name value` pairs after the command, each allowed name at most once. */
function options(args: string[], allowed: readonly string[]): Record<string, string> {
  const found: Record<string, string> = {};
  for (let n = 0; n < args.length; n += 2) {
    const [name, value] = [args[n], args[n + 1]];
    if (!name?.startsWith('--') || value === undefined) throw new UsageError();
    const key = name.slice(2);
    if (!allowed.includes(key) || key in found) throw new UsageError();
    found[key] = value;
  }
  return found;
}

function limitOf(value: string | undefined): number {
  if (value === undefined) return 100;
  if (!/^\d{1,3}$/.test(value) || Number(value) < 1 || Number(value) > 500)
    throw new AdminInputError('--limit is a whole number from 1 to 500');
  return Number(value);
}

function queryOf(found: Record<string, string>): ConnectionQuery {
  const { connection, session, licence } = found;
  const given = [connection, session, licence].filter((each) => each !== undefined);
  if (given.length !== 1) throw new UsageError();
  if (connection !== undefined) return { connectionId: connection };
  if (session !== undefined) return { sessionRef: session };
  return { licence: licence ?? '' };
}

/** The re-encryption to its end: this instance's, or one another instance runs (looked at every second). */
async function reencrypt(admin: AdminService): Promise<ReencryptJob> {
  await admin.startReencrypt(actor);
  const mine = admin.reencryptSettled();
  if (mine) return mine;
  for (;;) {
    const job = await admin.reencryptJob();
    if (job.state !== 'running') return job;
    console.error(JSON.stringify({ progress: job }));
    await delay(1000);
  }
}

/** One command over the use cases: its answer, printed as JSON. */
async function run(admin: AdminService, command: string | undefined, rest: string[]) {
  const [first, second] = rest;
  const one = (): string => {
    if (rest.length !== 1 || first === undefined) throw new UsageError();
    return first;
  };
  switch (command) {
    case 'overview':
      if (rest.length > 0) throw new UsageError();
      return admin.overview();
    case 'stats':
      if (rest.length > 0) throw new UsageError();
      return admin.overview({ walk: true });
    case 'find': {
      const found = options(rest, ['connection', 'session', 'licence', 'limit']);
      const connections = await admin.findConnections(queryOf(found), limitOf(found.limit));
      return { ok: connections.length > 0, connections };
    }
    case 'disconnect':
      return admin.disconnect(one(), actor);
    case 'end-session':
      return admin.endSession(one(), actor);
    case 'end-licence':
      return admin.endSessionsOfLicence(one(), actor);
    case 'drop-session': {
      if (first !== '--connection') return admin.endSessionOf(one(), actor);
      if (rest.length !== 2 || second === undefined) throw new UsageError();
      const [held] = await admin.findConnections({ connectionId: second }, 1);
      return held
        ? admin.endSession(held.sessionRef, actor)
        : { ok: false, count: 0, error: 'not_found' };
    }
    case 'dead-letters': {
      const found = options(rest, ['reason', 'limit']);
      const limit = limitOf(found.limit);
      const deadLetters = await admin.deadLetters(
        found.reason === undefined ? { limit } : { limit, reason: found.reason },
      );
      return { deadLetters };
    }
    case 'redeliver':
      return admin.redeliver(one(), actor);
    case 'discard':
      return admin.discard(one(), actor);
    case 'reencrypt': {
      if (rest.length > 0) throw new UsageError();
      const job = await reencrypt(admin);
      return { ...job, ok: job.state === 'done' && Object.keys(job.missingKey).length === 0 };
    }
    case 'events':
      if (first === 'sweep' && rest.length === 1) return admin.sweepEvents(actor);
      if (rest.length > 0) throw new UsageError();
      return {
        ...(await admin.overview()).events,
        newestDeadLetters: await admin.deadLetters({ limit: 100 }),
      };
    default:
      throw new UsageError();
  }
}

/** The use cases over the broker's Redis, as its configuration says. */
async function withAdmin(config: Config, work: (admin: AdminService) => Promise<unknown>) {
  if (!config.redis.topology)
    throw new AdminInputError(
      'REDIS_URL, REDIS_SENTINEL or REDIS_CLUSTER_NODES is required: the admin commands work on the broker’s Redis',
    );
  const redis = createRedis(config.redis.topology, { cacheEntries: 0 });
  redis.client.on('error', () => {});
  await redis.client.connect();
  const store = createRedisStore(redis);
  const now = Date.now;
  // The brokers deliver what the CLI records: the outbox and its schedule are in Redis.
  const events = config.events.webhook
    ? createOutbox({ store, now, limits: config.events.limits })
    : noEvents;
  const admin = createAdminOverStore({
    redis,
    store,
    keyring: config.keyring,
    sessionLifetime: config.sessions.lifetime,
    events,
    now,
    build: readBuildInfo(import.meta.url),
    onReencryptBatch: (job) => console.error(JSON.stringify({ progress: job })),
  });
  try {
    return await work(admin);
  } finally {
    await admin.stop();
    await redis.client.close();
  }
}

async function main(args: string[]): Promise<number> {
  const [command, ...rest] = args;
  try {
    let result: unknown;
    if (command === 'token') {
      const [name, role] = rest;
      if (rest.length !== 2 || name === undefined || (role !== 'viewer' && role !== 'operator'))
        throw new UsageError();
      // Printed once: only its hash is kept (the entry, for ADMIN_TOKENS_FILE).
      try {
        result = newAdminToken(name, role);
      } catch (refused) {
        throw new AdminInputError((refused as Error).message);
      }
    } else result = await withAdmin(loadConfig(process.env), (admin) => run(admin, command, rest));
    console.log(JSON.stringify(result, null, 2));
    return (result as { ok?: boolean }).ok === false ? 1 : 0;
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(USAGE);
      return 2;
    }
    if (!(error instanceof ConfigError || error instanceof AdminInputError)) throw error;
    console.error(error.message);
    return error instanceof AdminInputError ? 2 : 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
