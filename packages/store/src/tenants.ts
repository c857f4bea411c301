// Tenant limits (written by the control plane from the operator config) and running counts.
import { type StoreContext, keys } from './context.ts';

export async function setTenantLimits(
  ctx: StoreContext,
  tenant: string,
  limits: { maxConcurrentRuns: number },
): Promise<void> {
  await ctx.redis.hset(
    keys(ctx.prefix).tenantLimits(tenant),
    'maxConcurrentRuns',
    String(limits.maxConcurrentRuns),
  );
}

/** Runs of the tenant currently in state `running`. */
export async function tenantRunningCount(ctx: StoreContext, tenant: string): Promise<number> {
  return ctx.redis.scard(keys(ctx.prefix).tenantRunning(tenant));
}

/** Oldest waiting (queued/retrying) run of a pool and how long it has waited. */
export async function oldestWaiting(
  ctx: StoreContext,
  pool: string,
  now: Date = new Date(),
): Promise<{ runId: string; ageSeconds: number } | null> {
  const [runId, score] = await ctx.redis.zrange(
    keys(ctx.prefix).poolWaiting(pool),
    0,
    0,
    'WITHSCORES',
  );
  if (runId === undefined || score === undefined) return null;
  return { runId, ageSeconds: Math.max(0, (now.getTime() - Number(score)) / 1000) };
}
