// The bench's phases, each against a running fleet: a burst of instant runs through REST (and
// the same burst through plain BullMQ), queued-together priority order, a binding tenant cap,
// and an idle window. Each returns what it measured; main.ts judges and prints.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { bullPriority } from '@anneal/protocol';
import {
  type PoolQueues,
  type StoreContext,
  getRun,
  keys,
  queueCounts,
  runCounts,
} from '@anneal/store';
import { percentile } from './checks.ts';
import { type RedisLoad, loadBetween, readCounters } from './redis.ts';
import { UNTIL_RELEASED } from './instant-executor.ts';
import { type RunRequest, type Submitted, submitRuns } from './submit.ts';

export interface Env {
  url: string;
  tokens: Record<string, string>;
  store: StoreContext;
  queues: PoolQueues;
  /** A plain client for INFO (its calls are excluded from the load). */
  info: Redis;
  inFlight: number;
  timeoutMs: number;
  /** CPU milliseconds used so far by each process group. */
  cpu(): Promise<CpuTimes>;
  /** Ends every run held until released. */
  release(): Promise<void>;
}

export interface CpuTimes {
  /** The bench itself: the REST client, or the baseline's addBulk. */
  bench: number;
  controlPlane: number;
  workers: number;
}

const cpuBetween = (a: CpuTimes, b: CpuTimes): CpuTimes => ({
  bench: b.bench - a.bench,
  controlPlane: b.controlPlane - a.controlPlane,
  workers: b.workers - a.workers,
});

export interface Burst {
  runs: number;
  seconds: number;
  /** Until every run was submitted (REST answered / addBulk returned). */
  submitSeconds: number;
  /** CPU ms each process group used during the burst. */
  cpu: CpuTimes;
  runsPerSecond: number;
  /** Queued -> started (ms). */
  latency: { p50: number; p99: number };
  load: RedisLoad;
}

const POLL_MS = 20;

async function terminalRuns(store: StoreContext): Promise<number> {
  const counts = await runCounts(store);
  return counts
    .filter((c) => c.state === 'succeeded' || c.state === 'failed' || c.state === 'cancelled')
    .reduce((sum, c) => sum + c.count, 0);
}

/** Polls until `target` runs are terminal; returns the number of polls (one HGETALL each). */
async function waitTerminal(env: Env, target: number): Promise<number> {
  const deadline = Date.now() + env.timeoutMs;
  let polls = 0;
  for (;;) {
    polls += 1;
    const done = await terminalRuns(env.store);
    if (done >= target) return polls;
    if (Date.now() > deadline)
      throw new Error(`only ${done} of ${target} runs ended within ${env.timeoutMs} ms`);
    await sleep(POLL_MS);
  }
}

async function until(
  what: string,
  timeoutMs: number,
  check: () => Promise<boolean>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(POLL_MS);
  }
}

const minus = (load: RedisLoad, command: string, calls: number): RedisLoad => ({
  ...load,
  commands: load.commands - calls,
  byCommand: { ...load.byCommand, [command]: (load.byCommand[command] ?? 0) - calls },
});

/** Submits `requests` through REST and waits until every run ended. */
export async function submitAndWait(env: Env, requests: readonly RunRequest[]) {
  const done0 = await terminalRuns(env.store);
  const t0 = Date.now();
  const submitted = await submitRuns(env.url, env.tokens, requests, env.inFlight);
  const submitSeconds = (Date.now() - t0) / 1000;
  const polls = await waitTerminal(env, done0 + requests.length);
  return { submitted, t0, submitSeconds, polls };
}

/** A burst through REST: throughput, queued -> started latency, Redis load, CPU. */
export async function annealBurst(
  env: Env,
  requests: readonly RunRequest[],
): Promise<{ burst: Burst; submitted: Submitted[] }> {
  const cpu0 = await env.cpu();
  const before = await readCounters(env.info);
  const { submitted, t0, submitSeconds, polls } = await submitAndWait(env, requests);
  const after = await readCounters(env.info);
  const cpu = cpuBetween(cpu0, await env.cpu());
  const runs = await Promise.all(submitted.map((s) => getRun(env.store, s.id)));
  let end = t0;
  const waits: number[] = [];
  for (const run of runs) {
    if (!run?.startedAt || !run.endedAt || run.state !== 'succeeded') {
      throw new Error(`run ${run?.id} ended ${run?.state}: ${run?.error ?? ''}`);
    }
    end = Math.max(end, Date.parse(run.endedAt));
    waits.push(Date.parse(run.startedAt) - Date.parse(run.createdAt));
  }
  const seconds = (end - t0) / 1000;
  return {
    submitted,
    burst: {
      runs: requests.length,
      seconds,
      submitSeconds,
      cpu,
      runsPerSecond: requests.length / seconds,
      latency: { p50: percentile(waits, 0.5), p99: percentile(waits, 0.99) },
      // The bench's own completion polls are not the scheduler's load.
      load: minus(loadBetween(before, after), 'hgetall', polls),
    },
  };
}

/** Plain BullMQ queues per pool: `add` (the submitter's connection) and `observe` (the
 * bench's, for completion polls and reading jobs back). */
export interface BaselineQueues {
  add: ReadonlyMap<string, Queue>;
  observe: ReadonlyMap<string, Queue>;
}

/** Adds one job per request with addBulk per queue and waits until all completed. */
export async function addAndWait(
  env: Env,
  queues: BaselineQueues,
  requests: readonly RunRequest[],
  tag: string,
) {
  const ids = requests.map((_, i) => `${tag}-${i}`);
  const byPool = new Map<string, Array<{ name: string; data: object; opts: object }>>();
  requests.forEach((r, i) => {
    const list = byPool.get(r.pool) ?? [];
    const jobId = ids[i] ?? '';
    list.push({
      name: 'run',
      data: { runId: jobId },
      opts: { jobId, priority: bullPriority(r.priority) },
    });
    byPool.set(r.pool, list);
  });
  // A plain ZCARD per queue (getCompletedCount would run a Lua script of its own).
  const completed = async () => {
    const keys = [...queues.observe.values()].map((q) => q.toKey('completed'));
    const counts = await Promise.all(keys.map((key) => env.store.redis.zcard(key)));
    return counts.reduce((a, b) => a + b, 0);
  };
  const done0 = await completed();
  const t0 = Date.now();
  await Promise.all([...byPool].map(([pool, jobs]) => queues.add.get(pool)?.addBulk(jobs)));
  const submitSeconds = (Date.now() - t0) / 1000;
  let polls = 0;
  await until('the baseline jobs', env.timeoutMs, async () => {
    polls += 1;
    return (await completed()) >= done0 + requests.length;
  });
  return { ids, t0, submitSeconds, polls };
}

/** The same burst through plain BullMQ: addBulk per queue, empty processors. */
export async function baselineBurst(
  env: Env,
  queues: BaselineQueues,
  requests: readonly RunRequest[],
  tag: string,
): Promise<{ burst: Burst; ids: string[] }> {
  const cpu0 = await env.cpu();
  const before = await readCounters(env.info);
  const { ids, t0, submitSeconds, polls } = await addAndWait(env, queues, requests, tag);
  const after = await readCounters(env.info);
  const cpu = cpuBetween(cpu0, await env.cpu());
  let end = t0;
  const waits: number[] = [];
  for (const queue of queues.observe.values()) {
    for (const job of await queue.getJobs(['completed'])) {
      if (!job.id?.startsWith(`${tag}-`) || job.finishedOn === undefined) continue;
      if (job.processedOn === undefined) continue;
      end = Math.max(end, job.finishedOn);
      waits.push(job.processedOn - job.timestamp);
    }
  }
  const seconds = (end - t0) / 1000;
  const burst = {
    runs: requests.length,
    seconds,
    submitSeconds,
    cpu,
    runsPerSecond: requests.length / seconds,
    latency: { p50: percentile(waits, 0.5), p99: percentile(waits, 0.99) },
    // Each completion poll is one ZCARD per queue.
    load: minus(loadBetween(before, after), 'zcard', polls * queues.observe.size),
  };
  return { burst, ids };
}

export interface PriorityPhase {
  submitted: Submitted[];
  /** Blockers, and the runs queued together behind them. */
  blockers: Set<string>;
  /** When every queued-together job was in its pool's queue (bench clock, ms). */
  queuedAllMs: number;
  /** Run ids in the order Redis recorded their `running` transitions, by pool. */
  starts: Map<string, string[]>;
}

/**
 * Fills every slot with blockers held until released, then queues low-priority runs and after
 * them high-priority ones in each pool; once every job is in its queue, releases the blockers
 * and the queued runs start. FIFO would start the low ones first.
 */
export async function priorityPhase(
  env: Env,
  pools: ReadonlyMap<string, number>,
  tenant: string,
): Promise<PriorityPhase> {
  const totalSlots = [...pools.values()].reduce((a, b) => a + b, 0);
  const done0 = await terminalRuns(env.store);
  const running0 = await countIn(env.store, 'running');
  const blockerRequests = [...pools].flatMap(([pool, slots]) =>
    Array.from({ length: slots }, () => ({ tenant, pool, priority: 50, hold: UNTIL_RELEASED })),
  );
  const blockers = await submitRuns(env.url, env.tokens, blockerRequests, env.inFlight);
  await until(
    'every slot busy with a blocker',
    env.timeoutMs,
    async () => (await countIn(env.store, 'running')) >= running0 + totalSlots,
  );
  const queued = (priority: number) =>
    [...pools].flatMap(([pool, slots]) =>
      Array.from({ length: 2 * slots }, () => ({ tenant, pool, priority, hold: 0 })),
    );
  const low = await submitRuns(env.url, env.tokens, queued(10), env.inFlight);
  const high = await submitRuns(env.url, env.tokens, queued(90), env.inFlight);
  await until('the queued-together jobs in BullMQ', env.timeoutMs, async () => {
    for (const [pool, slots] of pools) {
      if ((await queueCounts(env.queues.get(pool))).prioritized < 4 * slots) return false;
    }
    return true;
  });
  const queuedAllMs = Date.now();
  await env.release();
  const submitted = [...blockers, ...low, ...high];
  await waitTerminal(env, done0 + submitted.length);
  const phase = new Set([...low, ...high].map((s) => s.id));
  const poolOf = new Map(submitted.map((s) => [s.id, s.pool]));
  const starts = new Map<string, string[]>();
  for (const [, flat] of await env.store.redis.xrange(
    keys(env.store.prefix).transitionLog(),
    '-',
    '+',
  )) {
    const f = new Map<string, string>();
    for (let i = 0; i + 1 < flat.length; i += 2) f.set(flat[i] ?? '', flat[i + 1] ?? '');
    const runId = f.get('runId') ?? '';
    if (f.get('to') !== 'running' || !phase.has(runId)) continue;
    const pool = poolOf.get(runId) ?? '?';
    starts.set(pool, [...(starts.get(pool) ?? []), runId]);
  }
  return { submitted, blockers: new Set(blockers.map((b) => b.id)), queuedAllMs, starts };
}

async function countIn(store: StoreContext, state: string): Promise<number> {
  return (await runCounts(store)).filter((c) => c.state === state).reduce((a, c) => a + c.count, 0);
}

/** Runs of a capped tenant next to open ones, all held `holdMs`, so the cap binds. */
export async function capPhase(
  env: Env,
  poolNames: readonly string[],
  capped: { tenant: string; runs: number },
  open: { tenant: string; runs: number },
  holdMs: number,
): Promise<Submitted[]> {
  const requests: RunRequest[] = [];
  for (let i = 0; i < Math.max(capped.runs, open.runs); i++) {
    const pool = poolNames[i % poolNames.length] ?? '';
    if (i < capped.runs) requests.push({ tenant: capped.tenant, pool, priority: 50, hold: holdMs });
    if (i < open.runs) requests.push({ tenant: open.tenant, pool, priority: 50, hold: holdMs });
  }
  const done0 = await terminalRuns(env.store);
  const submitted = await submitRuns(env.url, env.tokens, requests, env.inFlight);
  await waitTerminal(env, done0 + requests.length);
  return submitted;
}

/** Redis load over `seconds` with nothing submitted. */
export async function idleWindow(env: Env, seconds: number): Promise<RedisLoad> {
  const before = await readCounters(env.info);
  await sleep(seconds * 1000);
  return loadBetween(before, await readCounters(env.info));
}
