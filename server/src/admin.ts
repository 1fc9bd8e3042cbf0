/**
 * The operator's command line, on the broker's own environment (the same Redis settings and
 * TOKEN_ENCRYPTION_KEYS): `node dist/admin.js <command>` in the deployable folder, or
 * `pnpm --filter @baton/server admin <command>` in the repository. Prints JSON.
 *
 *   stats                       sessions, and connections by status and by encryption key id
 *   reencrypt                   seal every connection record again under the active key
 *   drop-session <sid>          delete one session and its connections (sid: the session's key id)
 *   drop-session --connection <id>
 *                               the same, for the session that holds this connection
 *   events                      events waiting for delivery, and the newest dead letters
 *   events sweep                schedule every outbox in Redis (a SCAN: after instances died)
 */
import { createAdmin } from './ops/admin-commands.ts';
import { ConfigError, loadConfig } from './config/config.ts';
import { createRedis } from './store/redis/clients.ts';

const USAGE =
  'usage: admin stats | reencrypt | drop-session <sid> | drop-session --connection <id> | events [sweep]';

async function main(args: string[]): Promise<number> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(error.message);
    return 1;
  }
  if (!config.redis.topology) {
    console.error(
      'REDIS_URL, REDIS_SENTINEL or REDIS_CLUSTER_NODES is required: the admin commands work on the broker’s Redis',
    );
    return 1;
  }
  const redis = createRedis(config.redis.topology, { cacheEntries: 0 });
  redis.client.on('error', () => {});
  await redis.client.connect();
  try {
    const admin = createAdmin(redis, config.keyring, {
      events: config.events.webhook !== undefined,
    });
    const [command, ...rest] = args;
    let result: unknown;
    if (command === 'stats') result = await admin.stats();
    else if (command === 'reencrypt') result = await admin.reencrypt();
    else if (command === 'events' && rest.length === 0) result = await admin.events();
    else if (command === 'events' && rest[0] === 'sweep' && rest.length === 1)
      result = await admin.sweepEvents();
    else if (command === 'drop-session' && rest[0] === '--connection' && rest[1])
      result = await admin.dropSessionOf(rest[1]);
    else if (command === 'drop-session' && rest.length === 1 && rest[0])
      result = await admin.dropSession(rest[0]);
    else {
      console.error(USAGE);
      return 2;
    }
    console.log(JSON.stringify(result, null, 2));
    return (result as { ok?: boolean }).ok === false ? 1 : 0;
  } finally {
    await redis.client.close();
  }
}

process.exitCode = await main(process.argv.slice(2));
