// The one path of acknowledged writes: on the context's durable connection, confirmed by its
// replicas (replication.ts) before the caller sees the reply; without `durable`, as is.
import type { Redis } from 'ioredis';
import { type StoreContext, keys } from './context.ts';
import { replicationGuard } from './replication.ts';

/** Runs `write` on the connection for acknowledged writes and returns once it is confirmed. */
export function acknowledged<T>(
  ctx: StoreContext,
  what: string,
  write: (redis: Redis) => Promise<T>,
  merge?: (first: T, again: T) => T,
): Promise<T> {
  const durable = ctx.durable;
  if (!durable) return write(ctx.redis);
  return durable.guard.confirm(what, () => write(durable.redis), merge);
}

const readerGuard = (ctx: StoreContext, redis: Redis) =>
  ctx.durable && replicationGuard(redis, ctx.durable.guard.options);

/** Readers (SSE) take this before a read whose result they will fence (`replicatedSince`). */
export function readGeneration(ctx: StoreContext, redis: Redis): number {
  return readerGuard(ctx, redis)?.generation ?? 0;
}

/**
 * For readers (SSE): true when what `redis` read since `readGeneration` gave `since` is on the
 * replicas acknowledged writes wait for, so a failover cannot take it back; false: not (yet).
 */
export function replicatedSince(ctx: StoreContext, redis: Redis, since: number): Promise<boolean> {
  const guard = readerGuard(ctx, redis);
  if (!guard) return Promise.resolve(true);
  return guard.fence(keys(ctx.prefix).replicationFence(), since);
}
