// Finding what Redis lost that Anneal had acknowledged. After a failover to a replica that was
// behind (acknowledged writes wait for a replica, docs/reliability.md "What a failover keeps";
// without one, or with the wait turned off, they do not), a run can be left with a step history
// that has a hole or a checkpoint pointer past its last step, or with no BullMQ job although
// it still waits or runs (nobody would ever run it). The control plane audits its unfinished
// runs at start-up and after each reconnect (apps/control-plane jobs/audit.ts) and repairs
// or fails them loudly.
import type { Queue } from 'bullmq';
import { type StoreContext, keys } from './context.ts';

export type LostData =
  /** Steps 1..highest that the history lacks; `checkpointStep`: where the run would resume. */
  | {
      kind: 'steps';
      runId: string;
      state: string;
      missing: number[];
      checkpointStep: number | null;
    }
  /** The run waits or runs, but its job is gone (`unknown`) or finished. */
  | { kind: 'job'; runId: string; state: string; jobState: string };

export interface AuditOptions {
  tenants: readonly string[];
  pools: readonly string[];
  queueOf(pool: string): Queue;
  /** Runs changed more recently than this are left alone (their job may be on its way). */
  minAgeMs?: number;
  now?: Date;
}

/** Steps of 1..max(its highest step, `through`) that `runId`'s history lacks (none: []). */
async function missingSteps(ctx: StoreContext, runId: string, through: number): Promise<number[]> {
  const k = keys(ctx.prefix);
  const count = await ctx.redis.zcard(k.stepIndex(runId));
  const top = Number((await ctx.redis.zrevrange(k.stepIndex(runId), 0, 0))[0] ?? 0);
  const highest = Math.max(top, through);
  if (count === highest) return [];
  const held = new Set((await ctx.redis.zrange(k.stepIndex(runId), 0, -1)).map(Number));
  return Array.from({ length: highest }, (_, i) => i + 1).filter((step) => !held.has(step));
}

/** Unfinished runs (running, queued, retrying) of these tenants and pools with lost data. */
export async function findLostData(ctx: StoreContext, options: AuditOptions): Promise<LostData[]> {
  const k = keys(ctx.prefix);
  const now = (options.now ?? new Date()).getTime();
  const minAgeMs = options.minAgeMs ?? 30_000;
  const candidates = new Set<string>();
  for (const tenant of options.tenants) {
    for (const id of await ctx.redis.smembers(k.tenantRunning(tenant))) candidates.add(id);
  }
  for (const pool of options.pools) {
    for (const id of await ctx.redis.zrange(k.poolWaiting(pool), 0, -1)) candidates.add(id);
  }
  const found: LostData[] = [];
  for (const runId of candidates) {
    const [state, pool, updatedAt, lastStep, checkpointStep] = await ctx.redis.hmget(
      k.run(runId),
      'state',
      'pool',
      'updatedAt',
      'lastStep',
      'checkpointStep',
    );
    if (state !== 'running' && state !== 'queued' && state !== 'retrying') continue;
    const checkpoint = checkpointStep == null ? null : Number(checkpointStep);
    // A pointer past the history counts its steps as missing too (it would resume after them).
    const through = Math.max(Number(lastStep ?? 0), checkpoint ?? 0);
    const missing = await missingSteps(ctx, runId, through);
    if (missing.length > 0) {
      found.push({ kind: 'steps', runId, state, missing, checkpointStep: checkpoint });
      continue;
    }
    if (!pool || now - Date.parse(updatedAt ?? '') < minAgeMs) continue;
    if ((await ctx.redis.zscore(k.outbox(), runId)) !== null) continue; // job still to be added
    const jobState = await options.queueOf(pool).getJobState(runId);
    if (jobState === 'unknown' || jobState === 'completed' || jobState === 'failed') {
      found.push({ kind: 'job', runId, state, jobState });
    }
  }
  return found;
}
