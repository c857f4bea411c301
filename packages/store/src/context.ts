// The store context: an ioredis client plus the key prefix every key starts with.
// The default prefix `{anneal}` is a Redis Cluster hash tag: all of Anneal's keys (and its
// BullMQ queues) hash to one slot, so Lua scripts may touch any of them atomically.
import type { Redis } from 'ioredis';
import { defineScripts } from './scripts.ts';

export const DEFAULT_PREFIX = '{anneal}';

export interface StoreContext {
  readonly redis: Redis;
  readonly prefix: string;
}

/** Wraps a client (defining Anneal's Lua commands on it). Tests pass a unique prefix. */
export function createStoreContext(redis: Redis, prefix: string = DEFAULT_PREFIX): StoreContext {
  if (!/^\{[^{}]+\}/.test(prefix)) {
    throw new Error(`store prefix must start with a {hash-tag}, got '${prefix}'`);
  }
  defineScripts(redis);
  return { redis, prefix };
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
    tenantRuns: (tenant: string) => `${prefix}:tenant:${tenant}:runs`,
    tenantRunning: (tenant: string) => `${prefix}:tenant:${tenant}:running`,
    tenantLimits: (tenant: string) => `${prefix}:tenant:${tenant}:limits`,
    poolWaiting: (pool: string) => `${prefix}:pool:${pool}:waiting`,
    idempotency: (tenant: string, keyHash: string) => `${prefix}:idem:${tenant}:${keyHash}`,
    outbox: () => `${prefix}:outbox`,
    workers: () => `${prefix}:workers`,
    poolWorkers: (pool: string) => `${prefix}:pool:${pool}:workers`,
    worker: (id: string) => `${prefix}:worker:${id}`,
    workerDrain: (id: string) => `${prefix}:worker:${id}:drain`,
    controlChannel: () => `${prefix}:control`,
    /** Hash `<state>/<kind>` -> number of runs in that state (kept by the Lua scripts). */
    runCounts: () => `${prefix}:stats:runs`,
    /** Stream of every run state change (capped), read by the control plane for metrics. */
    transitionLog: () => `${prefix}:stats:transitions`,
    bullPrefix: () => `${prefix}:bull`,
  };
}
