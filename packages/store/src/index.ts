// @anneal/store: Anneal's Redis storage as plain functions taking a StoreContext
// ({ redis, prefix }). Used by the control plane and by workers. See README.md.
export {
  DEFAULT_PREFIX,
  type DurableWrites,
  type StoreContext,
  type StoreContextOptions,
  createStoreContext,
  keys,
} from './context.ts';
export { acknowledged, readGeneration, replicatedSince } from './durable.ts';
export {
  DEFAULT_REPLICATION,
  NotReplicatedError,
  type ReplicaRequirement,
  type ReplicationGuard,
  type ReplicationOptions,
  parseReplicaRequirement,
  replicationGuard,
} from './replication.ts';
export { newRunId, newSweepId } from './ids.ts';
export {
  DEFAULT_ARTIFACT_DIR,
  EVAL_ITEMS_FILE,
  engineArtifactDir,
  runArtifactDir,
} from './artifacts.ts';
export { deleteKeysWithPrefix } from './purge.ts';
export * from './runs.ts';
export * from './sweeps.ts';
export * from './run-view.ts';
export * from './transitions.ts';
export * from './steps.ts';
export * from './events.ts';
export * from './notices.ts';
export * from './checkpoints.ts';
export * from './checkpoint-catalogue.ts';
export * from './workers.ts';
export * from './lost-workers.ts';
export * from './audit.ts';
export * from './control.ts';
export * from './pause.ts';
export * from './tenants.ts';
export * from './adapter-slots.ts';
export * from './shared-references.ts';
export * from './fair-share.ts';
export * from './usage.ts';
export * from './queues.ts';
export { EVENTS_MAX_LEN } from './scripts.ts';
export * from './stats.ts';
export * from './reachable.ts';
export { connectRedis, type RedisConnectionLogger } from './connect.ts';
export {
  RedisUrlError,
  createRedisClient,
  isSentinelUrl,
  redactUrl,
  sentinelOptions,
} from './redis-url.ts';
export * from './guardrails.ts';
export * from './rollout-ledger/index.ts';
