// Worker registry: each worker refreshes a record with a TTL (heartbeat); drain requests live
// in a separate key so a heartbeat never overwrites them.
import { DEFAULT_WORKER_TTL_SECONDS, WorkerRecord, parseStored } from '@anneal/protocol';
import { type StoreContext, keys } from './context.ts';
import { publishControl } from './control.ts';

/**
 * How long a worker stays in its pool's index after its last heartbeat (the index outlives the
 * TTL'd record, so a worker that died without a clean shutdown stays known — and alertable —
 * for this long). A clean shutdown (removeWorker) forgets it at once.
 */
export const WORKER_INDEX_RETENTION_MS = 24 * 60 * 60 * 1000;

export interface DrainState {
  draining: boolean;
  checkpointAndRelease: boolean;
}

/** The fields a worker reports; drain flags come from the store. */
export type WorkerHeartbeat = Omit<
  WorkerRecord,
  'draining' | 'checkpointAndRelease' | 'lastHeartbeat'
>;

/** Refreshes the worker's record (TTL `ttlSeconds`) and returns its drain state. */
export async function heartbeatWorker(
  ctx: StoreContext,
  heartbeat: WorkerHeartbeat,
  ttlSeconds: number = DEFAULT_WORKER_TTL_SECONDS,
  now: Date = new Date(),
): Promise<DrainState> {
  const k = keys(ctx.prefix);
  const drain = await getDrainState(ctx, heartbeat.id);
  const record: WorkerRecord = { ...heartbeat, ...drain, lastHeartbeat: now.toISOString() };
  await ctx.redis
    .multi()
    .set(k.worker(heartbeat.id), JSON.stringify(record), 'EX', ttlSeconds)
    .zadd(k.workers(), now.getTime(), heartbeat.id)
    .zadd(k.poolWorkers(heartbeat.pool), now.getTime(), heartbeat.id)
    .exec();
  return drain;
}

/** Workers of `pool` whose last heartbeat is within `ttlSeconds` (one ZCOUNT, no record reads). */
export async function onlineWorkerCount(
  ctx: StoreContext,
  pool: string,
  ttlSeconds: number = DEFAULT_WORKER_TTL_SECONDS,
  now: Date = new Date(),
): Promise<number> {
  return ctx.redis.zcount(
    keys(ctx.prefix).poolWorkers(pool),
    now.getTime() - ttlSeconds * 1000,
    '+inf',
  );
}

export interface KnownWorker {
  id: string;
  pool: string;
  lastHeartbeatMs: number;
}

/**
 * Every worker of `pool` seen within WORKER_INDEX_RETENTION_MS, live or not, with the time of
 * its last heartbeat (the pool index's score), oldest first. Trims entries past the retention.
 */
export async function knownWorkers(
  ctx: StoreContext,
  pool: string,
  now: Date = new Date(),
): Promise<KnownWorker[]> {
  const key = keys(ctx.prefix).poolWorkers(pool);
  await ctx.redis.zremrangebyscore(key, '-inf', `(${now.getTime() - WORKER_INDEX_RETENTION_MS}`);
  const flat = await ctx.redis.zrange(key, 0, -1, 'WITHSCORES');
  const out: KnownWorker[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) {
    out.push({ id: flat[i]!, pool, lastHeartbeatMs: Number(flat[i + 1]) });
  }
  return out;
}

export async function getDrainState(ctx: StoreContext, workerId: string): Promise<DrainState> {
  const raw = await ctx.redis.get(keys(ctx.prefix).workerDrain(workerId));
  if (raw === null) return { draining: false, checkpointAndRelease: false };
  return { draining: true, checkpointAndRelease: raw === 'release' };
}

/** Live workers (expired records are pruned from the index), optionally of one pool. */
export async function listWorkers(
  ctx: StoreContext,
  options: { pool?: string } = {},
): Promise<WorkerRecord[]> {
  const k = keys(ctx.prefix);
  const ids = await ctx.redis.zrange(k.workers(), 0, -1);
  if (ids.length === 0) return [];
  const raw = await ctx.redis.mget(...ids.map((id) => k.worker(id)));
  const expired = ids.filter((_, i) => raw[i] === null);
  if (expired.length > 0) await ctx.redis.zrem(k.workers(), ...expired);
  // Per-pool indexes only need trimming by age (onlineWorkerCount counts by score).
  const cutoff = Date.now() - WORKER_INDEX_RETENTION_MS;
  const workers = raw.flatMap((entry, i) =>
    entry === null ? [] : [parseStored(WorkerRecord, entry, k.worker(ids[i]!))],
  );
  const pools = new Set(workers.map((w) => w.pool));
  for (const pool of pools) await ctx.redis.zremrangebyscore(k.poolWorkers(pool), '-inf', cutoff);
  return workers
    .filter((w) => options.pool === undefined || w.pool === options.pool)
    .sort((a, b) => a.id.localeCompare(b.id));
}

export async function getWorker(ctx: StoreContext, workerId: string): Promise<WorkerRecord | null> {
  const key = keys(ctx.prefix).worker(workerId);
  const raw = await ctx.redis.get(key);
  return raw === null ? null : parseStored(WorkerRecord, raw, key);
}

/**
 * Graceful shutdown: forget the worker and its drain flag. Pass its `pool` so that it leaves
 * the pool's index even when its record already expired (otherwise it is looked up).
 */
export async function removeWorker(
  ctx: StoreContext,
  workerId: string,
  pool?: string,
): Promise<void> {
  const k = keys(ctx.prefix);
  const poolName = pool ?? (await getWorker(ctx, workerId))?.pool;
  if (poolName !== undefined) await ctx.redis.zrem(k.poolWorkers(poolName), workerId);
  await ctx.redis
    .multi()
    .del(k.worker(workerId), k.workerDrain(workerId))
    .zrem(k.workers(), workerId)
    .exec();
}

/** Marks the worker draining (persisted) and tells it over pub/sub. Null if it is not live. */
export async function requestDrain(
  ctx: StoreContext,
  workerId: string,
  checkpointAndRelease: boolean,
  drainTtlSeconds = 7 * 24 * 60 * 60,
): Promise<WorkerRecord | null> {
  const k = keys(ctx.prefix);
  const worker = await getWorker(ctx, workerId);
  if (!worker) return null;
  await ctx.redis.set(
    k.workerDrain(workerId),
    checkpointAndRelease ? 'release' : 'finish',
    'EX',
    drainTtlSeconds,
  );
  const updated: WorkerRecord = { ...worker, draining: true, checkpointAndRelease };
  await ctx.redis.set(k.worker(workerId), JSON.stringify(updated), 'KEEPTTL');
  await publishControl(ctx, { type: 'drain', workerId, checkpointAndRelease });
  return updated;
}
