// Fair share of an endpoint's in-flight capacity across runs and worker processes
// (docs/operations.md "Fair share of an endpoint"): plain functions over fair-share-script.ts.
// A worker keeps one waiter per (run, endpoint) — the head of its local queue asks — and one
// lease per request in flight; both expire unless renewed, so a dead worker leaks nothing.
import { type StoreContext, keys } from './context.ts';
import { runScript } from './scripts.ts';

/** How long a lease or waiter lives without a renewal: a dead worker's capacity comes back
 * within this; a live one renews every third of it. */
export const FAIR_SHARE_TTL_MS = 15_000;

function fairShareKeys(ctx: StoreContext, endpoint: string) {
  const base = keys(ctx.prefix).fairShare(endpoint);
  return {
    leases: `${base}:leases`,
    owners: `${base}:owners`,
    waiters: `${base}:waiters`,
    wanted: `${base}:wanted`,
    weights: `${base}:weights`,
    used: `${base}:used`,
    served: `${base}:served`,
  };
}

/** Requests granted per ask at most (the head and those behind it): a run refills the seats
 * freed at once in one round trip. */
export const FAIR_SHARE_BATCH = 16;

export interface FairShareAsk {
  /** The endpoint's capacity in sequences (vLLM --max-num-seqs × replicas). */
  capacity: number;
  runId: string;
  weight: number;
  /** One id per (process, run): the head of that process's queue for the run. */
  waiterId: string;
  /** Sequences of the first queued requests (each one's `n`), head first; granted in order
   * while they fit (at most FAIR_SHARE_BATCH are read). */
  units: readonly number[];
  /** Sequences this waiter has queued, all of its requests. */
  queued: number;
  /** Granted leases are `<leasePrefix>:1`, `<leasePrefix>:2`, … in queue order. */
  leasePrefix: string;
  ttlMs?: number;
}

export interface FairShareAnswer {
  /** How many of the first queued requests were granted. */
  granted: number;
  /** The run's allocation now (sequences; fractional). */
  allocation: number;
  /** Sequences held on the endpoint by every run, after this call. */
  held: number;
}

/** The id of the `i`-th (from 1) lease an ask granted. */
export const fairShareLeaseId = (leasePrefix: string, i: number): string => `${leasePrefix}:${i}`;

/** Asks for a waiter's first queued requests (FAIR_ACQUIRE): some granted, or registered as
 * waiting. */
export async function acquireFairShare(
  ctx: StoreContext,
  endpoint: string,
  ask: FairShareAsk,
): Promise<FairShareAnswer> {
  const k = fairShareKeys(ctx, endpoint);
  const reply = await runScript(
    ctx.redis,
    'annealFairAcquire',
    [k.leases, k.owners, k.waiters, k.wanted, k.weights, k.used],
    [
      ask.ttlMs ?? FAIR_SHARE_TTL_MS,
      ask.capacity,
      ask.runId,
      ask.weight,
      ask.waiterId,
      ask.queued,
      ask.leasePrefix,
      ...ask.units.slice(0, FAIR_SHARE_BATCH),
    ],
  );
  return { granted: Number(reply[0]), allocation: Number(reply[1]), held: Number(reply[2]) };
}

export interface FairShareRelease {
  runId: string;
  /** The lease to give back; absent: only withdraw `waiterId`. */
  leaseId?: string;
  /** Withdrawn too (its queue is empty). */
  waiterId?: string;
  /** Tokens the request was served (counted in the run's `served` totals). */
  tokens?: number;
  waitedMs?: number;
}

/** Gives a lease back (counting what the request was served and updating the run record's
 * `fleetShare`) and/or withdraws a waiter; true when the lease was still held (one that expired
 * was already reaped). */
export async function releaseFairShare(
  ctx: StoreContext,
  endpoint: string,
  release: FairShareRelease,
): Promise<boolean> {
  const k = fairShareKeys(ctx, endpoint);
  const reply = await runScript(
    ctx.redis,
    'annealFairRelease',
    [
      k.leases,
      k.owners,
      k.waiters,
      k.wanted,
      k.weights,
      k.used,
      k.served,
      keys(ctx.prefix).run(release.runId),
    ],
    [
      endpoint,
      release.runId,
      release.waiterId ?? '',
      release.leaseId ?? '',
      Math.round(release.tokens ?? 0),
      Math.round(release.waitedMs ?? 0),
    ],
  );
  return reply[0] === '1';
}

/** Pushes the expiry of a process's leases and waiters on (call every third of the TTL). */
export async function renewFairShare(
  ctx: StoreContext,
  endpoint: string,
  ids: readonly string[],
  ttlMs = FAIR_SHARE_TTL_MS,
): Promise<void> {
  if (ids.length === 0) return;
  const k = fairShareKeys(ctx, endpoint);
  await runScript(ctx.redis, 'annealFairRenew', [k.leases, k.waiters], [ttlMs, ...ids]);
}

export interface FairShareRun {
  runId: string;
  weight: number | null;
  /** Sequences held now. */
  held: number;
  requests: number;
  units: number;
  tokens: number;
  waitedSeconds: number;
}

/** Who holds what on an endpoint and what each run has been served (one MULTI). */
export async function readFairShare(ctx: StoreContext, endpoint: string): Promise<FairShareRun[]> {
  const k = fairShareKeys(ctx, endpoint);
  const reply = await ctx.redis.multi().hgetall(k.weights).hgetall(k.used).hgetall(k.served).exec();
  const [weights, used, served] = (reply ?? []).map(([error, value]) => {
    if (error) throw error;
    return value;
  }) as [Record<string, string>, Record<string, string>, Record<string, string>];
  const ids = new Set([
    ...Object.keys(weights),
    ...Object.keys(used),
    ...Object.keys(served)
      .filter((f) => !f.startsWith(':'))
      .map((f) => f.slice(0, f.lastIndexOf(':'))),
  ]);
  const num = (field: string) => Number(served[field] ?? 0);
  return [...ids].sort().map((runId) => ({
    runId,
    weight: weights[runId] === undefined ? null : Number(weights[runId]),
    held: Number(used[runId] ?? 0),
    requests: num(`${runId}:requests`),
    units: num(`${runId}:units`),
    tokens: num(`${runId}:tokens`),
    waitedSeconds: num(`${runId}:waitedMs`) / 1000,
  }));
}
