export { createApp, type AppDeps, type BrokerApp } from './http/app.ts';
export {
  composeEvents,
  composeServices,
  startBroker,
  type Services,
  type StartedBroker,
} from './compose.ts';
export { loadConfig, ConfigError, type Config } from './config/config.ts';
export { createLogger } from './ops/logger.ts';
export { createMetrics } from './ops/metrics.ts';
export { EVENT_SHARDS, eventShard, indexShard, keys, licenceMember } from './store/keys.ts';
export { format1Keys } from './store/format1/keys.ts';
export { createMemoryStore } from './store/memory.ts';
export { createRedisStore } from './store/redis/store.ts';
export { LIVENESS_MS } from './store/redis/reads.ts';
export { createRedisClient, trackedAnswers } from './store/redis/clients.ts';
export {
  createRedis,
  scanKeys,
  standalone,
  type Redis,
  type RedisTopology,
} from './store/redis/clients.ts';
export { StoreUnavailableError, type Store } from './store/types.ts';
export { shouldRefresh } from './connections/refresh/policy.ts';
export { storeDeps } from './http/stores.ts';
export type { RedisClient } from './store/redis/clients.ts';
export { configureServer } from './http/listener.ts';
export { createOutbox, parseWebhookSecret } from './ops/events.ts';
export { noEvents, type BrokerEvent } from './connections/events.ts';
export { createDelivery } from './ops/event-delivery.ts';
export {
  createAdminOverStore,
  createAdminUseCases,
  type AdminDeps,
  type AdminService,
} from './admin/use-cases.ts';
export { sessionRef } from './ops/events.ts';
export { parseKeyring } from './base/crypto.ts';
export { DATA_FORMAT, DataFormatError, upgradeFormat } from './store/format.ts';
