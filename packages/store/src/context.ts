// The store context: an ioredis client plus the key prefix every key starts with.
// The default prefix `{anneal}` is a Redis Cluster hash tag: all of Anneal's keys (and its
// BullMQ queues) hash to one slot, so Lua scripts may touch any of them atomically.
import type { Redis } from 'ioredis';
import { type ReplicationGuard, type ReplicationOptions, replicationGuard } from './replication.ts';
import { defineScripts } from './scripts.ts';

export const DEFAULT_PREFIX = '{anneal}';

/** Where acknowledged writes go: a connection of their own (WAIT blocks the connection it runs
 * on, so reads on `redis` never queue behind one) and its replication guard. */
export interface DurableWrites {
  readonly redis: Redis;
  readonly guard: ReplicationGuard;
}

export interface StoreContext {
  readonly redis: Redis;
  readonly prefix: string;
  /** Absent: writes are acknowledged as soon as the primary has them (tests, tools). */
  readonly durable?: DurableWrites;
}

export interface StoreContextOptions {
  /** Confirm acknowledged writes on replicas (replication.ts); `redis` defaults to the
   * context's client. */
  durable?: { redis?: Redis; replication: ReplicationOptions };
}

/** Wraps a client (defining Anneal's Lua commands on it). Tests pass a unique prefix. */
export function createStoreContext(
  redis: Redis,
  prefix: string = DEFAULT_PREFIX,
  options: StoreContextOptions = {},
): StoreContext {
  if (!/^\{[^{}]+\}/.test(prefix)) {
    throw new Error(`store prefix must start with a {hash-tag}, got '${prefix}'`);
  }
  defineScripts(redis);
  const durable = options.durable;
  if (!durable) return { redis, prefix };
  const writer = durable.redis ?? redis;
  defineScripts(writer);
  return {
    redis,
    prefix,
    durable: { redis: writer, guard: replicationGuard(writer, durable.replication) },
  };
}

/** Every key Anneal uses, in one place (memoised per prefix: it is on every request's path). */
export function keys(prefix: string): Keys {
  let cached = keyCache.get(prefix);
  if (!cached) {
    cached = buildKeys(prefix);
    keyCache.set(prefix, cached);
  }
  return cached;
}

export type Keys = ReturnType<typeof buildKeys>;
const keyCache = new Map<string, Keys>();

function buildKeys(prefix: string) {
  return {
    run: (id: string) => `${prefix}:run:${id}`,
    transitions: (id: string) => `${prefix}:run:${id}:transitions`,
    steps: (id: string) => `${prefix}:run:${id}:steps`,
    stepIndex: (id: string) => `${prefix}:run:${id}:stepidx`,
    events: (id: string) => `${prefix}:run:${id}:events`,
    /** Guardrail firings of a run, capped (guardrails.ts); `firingKeys`: which were recorded. */
    firings: (id: string) => `${prefix}:run:${id}:firings`,
    firingKeys: (id: string) => `${prefix}:run:${id}:firing-keys`,
    /** Step records a guardrail rollback took back, field `step:rollback` (guardrails.ts). */
    rolledBackSteps: (id: string) => `${prefix}:run:${id}:steps:rolled-back`,
    /** Hash step -> catalogue entry JSON (checkpoints.ts). */
    checkpoints: (id: string) => `${prefix}:run:${id}:checkpoints`,
    /** Sorted sets of catalogued steps (score = step): kept ones and deleted ones. */
    checkpointsKept: (id: string) => `${prefix}:run:${id}:checkpoints:kept`,
    checkpointsDeleted: (id: string) => `${prefix}:run:${id}:checkpoints:deleted`,
    /** Hash run id -> {step, atMs}: runs that start from one of this run's checkpoints. */
    checkpointUses: (id: string) => `${prefix}:run:${id}:checkpoint-uses`,
    tenantRuns: (tenant: string) => `${prefix}:tenant:${tenant}:runs`,
    tenantRunning: (tenant: string) => `${prefix}:tenant:${tenant}:running`,
    tenantLimits: (tenant: string) => `${prefix}:tenant:${tenant}:limits`,
    /** Hash sha256(starting weights) -> shared reference id (shared-references.ts). */
    sharedReferenceIds: (tenant: string) => `${prefix}:tenant:${tenant}:shared-references`,
    /** Hash of a run's metered usage (usage.ts). */
    runUsage: (id: string) => `${prefix}:run:${id}:usage`,
    /** Hash of a tenant's usage in one UTC day (`YYYY-MM-DD`) or month (`YYYY-MM`). */
    tenantUsage: (tenant: string, period: string) => `${prefix}:tenant:${tenant}:usage:${period}`,
    poolWaiting: (pool: string) => `${prefix}:pool:${pool}:waiting`,
    /** An endpoint's adapter slots (adapter-slots-script.ts): `:capacity` hash, `:held` hash run
     * id -> slots, `:waiting` zset. */
    endpointSlots: (role: string, endpoint: string) => `${prefix}:endpoint:${role}:${endpoint}`,
    /** An inference endpoint's fair share of in-flight capacity (fair-share-script.ts):
     * `:leases`, `:owners`, `:waiters`, `:wanted`, `:weights`, `:used`, `:served`. */
    fairShare: (endpoint: string) => `${prefix}:fair:${endpoint}`,
    idempotency: (tenant: string, keyHash: string) => `${prefix}:idem:${tenant}:${keyHash}`,
    /** A sweep's record (JSON, sweeps.ts), the tenant's sweep index and sweep Idempotency-Keys. */
    sweep: (id: string) => `${prefix}:sweep:${id}`,
    tenantSweeps: (tenant: string) => `${prefix}:tenant:${tenant}:sweeps`,
    sweepIdempotency: (tenant: string, keyHash: string) =>
      `${prefix}:idem-sweep:${tenant}:${keyHash}`,
    outbox: () => `${prefix}:outbox`,
    workers: () => `${prefix}:workers`,
    poolWorkers: (pool: string) => `${prefix}:pool:${pool}:workers`,
    worker: (id: string) => `${prefix}:worker:${id}`,
    workerDrain: (id: string) => `${prefix}:worker:${id}:drain`,
    controlChannel: () => `${prefix}:control`,
    /** Written by replication fences (replication.ts): the value is only a timestamp. */
    replicationFence: () => `${prefix}:repl-fence`,
    /** Hash `<state>/<kind>` -> number of runs in that state (kept by the Lua scripts). */
    runCounts: () => `${prefix}:stats:runs`,
    /** Stream of every run state change (capped), read by the control plane for metrics. */
    transitionLog: () => `${prefix}:stats:transitions`,
    bullPrefix: () => `${prefix}:bull`,
  };
}
