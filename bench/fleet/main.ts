// Fleet bench: scheduling at fleet scale (docs/performance.md "Scheduling at fleet scale").
// The real control plane (REST over HTTP -> outbox -> BullMQ) and real worker processes with an
// instant executor, on a private redis-server. Checks that every run executes exactly once and
// that priorities and tenant caps hold; compares end-to-end throughput with plain BullMQ on the
// same Redis, processes and concurrency (goal >= 50%); shows how Redis load grows from 10 to 100
// workers.
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { createPoolQueues, createStoreContext, deleteKeysWithPrefix } from '@anneal/store';
import { exactlyOnce, maxConcurrent, onceHolds, priorityOrder } from './checks.ts';
import { type WorkerProcess, startControlPlane, startWorkerProcess } from './children.ts';
import { cpuMs } from './executions.ts';
import { parseFlags } from './flags.ts';
import {
  CAPPED_LIMIT,
  CAPPED_TENANT,
  OPEN_TENANTS,
  POOLS,
  fleetOperatorConfig,
} from './operator.ts';
import { countCommands, localPort } from './monitor.ts';
import {
  type BaselineQueues,
  type Env,
  addAndWait,
  annealBurst,
  baselineBurst,
  capPhase,
  idleWindow,
  priorityPhase,
  submitAndWait,
} from './phases.ts';
import { type BenchRedis, sharedRedis, startPrivateRedis } from './redis.ts';
import { countLine, cpuLine, formatLoad, ms, verdict } from './report.ts';
import type { RunRequest, Submitted } from './submit.ts';

const GOAL = 0.5;
const WARM_UP_RUNS = 30;
/** Runs of the MONITOR phases (MONITOR slows Redis down, so they are not timed). */
const COUNTED_RUNS = 60;
const CAP_HOLD_MS = 300;
const flags = parseFlags(process.argv.slice(2));
if (flags.workers < POOLS.length) {
  throw new Error(`fleet bench: --workers must be at least ${POOLS.length}, one per pool`);
}

function benchRedis(): Promise<BenchRedis> | BenchRedis {
  if (flags.redisUrl !== undefined) return sharedRedis(flags.redisUrl);
  if (spawnSync('redis-server', ['--version']).status === 0)
    return startPrivateRedis('redis-server');
  const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  console.log(`redis-server is not on PATH: using ${url}; its load figures include other clients`);
  return sharedRedis(url);
}

/** Instant runs over every pool and open tenant, with a spread of priorities. */
function burstRequests(n: number): RunRequest[] {
  return Array.from({ length: n }, (_, i) => ({
    pool: POOLS[i % POOLS.length] ?? '',
    tenant: OPEN_TENANTS[Math.floor(i / POOLS.length) % OPEN_TENANTS.length] ?? '',
    priority: [0, 30, 60, 90][Math.floor(i / 9) % 4] ?? 0,
    hold: 0,
  }));
}

/** Pool of worker process i (round robin), and each pool's slots with `perProcess` workers. */
const poolOf = (i: number) => POOLS[i % POOLS.length] ?? '';
function poolSlots(perProcess: number): Map<string, number> {
  const slots = new Map<string, number>(POOLS.map((p) => [p, 0]));
  for (let i = 0; i < flags.workers; i++) {
    slots.set(poolOf(i), (slots.get(poolOf(i)) ?? 0) + perProcess * flags.slots);
  }
  return slots;
}

const redis = await benchRedis();
const prefix = `{anneal-fleet-${randomUUID().slice(0, 8)}}`;
const dir = await mkdtemp(path.join(tmpdir(), 'anneal-fleet-'));
const fleet = fleetOperatorConfig(flags.slots);
const configPath = path.join(dir, 'operator.json');
await writeFile(configPath, JSON.stringify(fleet.operator));
const childEnv = {
  ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('ANNEAL_'))),
  REDIS_URL: redis.url,
  ANNEAL_KEY_PREFIX: prefix,
  ANNEAL_CONFIG: configPath,
  ANNEAL_LOG_LEVEL: 'warn',
  ANNEAL_PORT: '0',
  ANNEAL_METRICS_PORT: '0',
  ANNEAL_METRICS_HOST: '127.0.0.1',
  ANNEAL_SLOTS: String(flags.slots),
  ANNEAL_ARTIFACT_DIR: path.join(dir, 'artifacts'),
};
const client = new Redis(redis.url, { maxRetriesPerRequest: null, enableAutoPipelining: true });
const info = new Redis(redis.url, { maxRetriesPerRequest: null });
const queueConnection = new Redis(redis.url, { maxRetriesPerRequest: null });
const store = createStoreContext(client, prefix);
const queues = createPoolQueues(queueConnection, prefix);
const baselinePrefix = `${prefix}:baseline`;
const baselineConnection = new Redis(redis.url, { maxRetriesPerRequest: null });
const baselineQueue = (connection: Redis) =>
  new Map(
    POOLS.map((p) => [p, new Queue(`baseline-${p}`, { connection, prefix: baselinePrefix })]),
  );
const baselineQueues: BaselineQueues = {
  add: baselineQueue(baselineConnection),
  observe: baselineQueue(queueConnection),
};
const benchPorts = () => new Set([client, info, queueConnection].map(localPort));
let processes: WorkerProcess[] = [];
const nodeOptions =
  flags.cpuProfDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${flags.cpuProfDir}`];
const control = await startControlPlane({ env: childEnv, nodeOptions });
const env: Env = {
  url: control.url,
  tokens: fleet.tokens,
  store,
  queues,
  info,
  inFlight: flags.inFlight,
  timeoutMs: 120_000,
  async cpu() {
    const reports = await Promise.all(processes.map((p) => p.report()));
    return {
      bench: cpuMs(),
      controlPlane: await control.cpuMs(),
      workers: reports.reduce((sum, r) => sum + r.cpuMs, 0),
    };
  },
  async release() {
    await Promise.all(processes.map((p) => p.release()));
  },
};

const line = (text = '') => console.log(text);
const load1 = () => loadavg()[0]?.toFixed(1) ?? '?';
let failed = false;
try {
  const slots10 = poolSlots(1);
  const slotText = [...slots10].map(([p, s]) => `${p} ${s}`).join(', ');
  line(
    `fleet bench: ${flags.runs} runs per burst; ${flags.workers} worker processes x ${flags.slots} slots (${slotText}); ` +
      (redis.private ? 'private redis-server (AOF everysec)' : `Redis at ${redis.url}`) +
      `; load average ${load1()}`,
  );
  let started = Date.now();
  processes = await Promise.all(
    Array.from({ length: flags.workers }, (_, i) =>
      startWorkerProcess(
        {
          env: { ...childEnv, ANNEAL_POOL: poolOf(i), ANNEAL_WORKER_ID: `fleet-${i}` },
          nodeOptions,
        },
        1,
      ),
    ),
  );
  line(`started ${flags.workers} worker processes in ${ms(Date.now() - started)}`);

  // Throughput: Anneal, then plain BullMQ on the same processes, Redis and concurrency.
  const warmUp = await annealBurst(env, burstRequests(WARM_UP_RUNS));
  const anneal = await annealBurst(env, burstRequests(flags.runs));
  await Promise.all(
    processes.map((p, i) =>
      p.baseline({
        queue: `baseline-${poolOf(i)}`,
        prefix: baselinePrefix,
        concurrency: flags.slots,
      }),
    ),
  );
  const baselineWarmUp = await baselineBurst(
    env,
    baselineQueues,
    burstRequests(WARM_UP_RUNS),
    'warm',
  );
  const baseline = await baselineBurst(env, baselineQueues, burstRequests(flags.runs), 'burst');
  // What one run / one job costs Redis, command by command (small bursts under MONITOR).
  let baselineCounted: string[] = [];
  const perJob = await countCommands(info, benchPorts(), async () => {
    const added = await addAndWait(env, baselineQueues, burstRequests(COUNTED_RUNS), 'counted');
    baselineCounted = added.ids;
  });
  await Promise.all(processes.map((p) => p.baselineStop()));
  let counted: Submitted[] = [];
  const perRun = await countCommands(info, benchPorts(), async () => {
    counted = (await submitAndWait(env, burstRequests(COUNTED_RUNS))).submitted;
  });

  // Priorities, a binding tenant cap, the idle load of the first fleet.
  const priority = await priorityPhase(env, slots10, OPEN_TENANTS[0]);
  const capped = await capPhase(
    env,
    POOLS,
    { tenant: CAPPED_TENANT, runs: 3 * CAPPED_LIMIT },
    { tenant: OPEN_TENANTS[1], runs: 12 },
    CAP_HOLD_MS,
  );
  const idle10 = await idleWindow(env, flags.idleSeconds);

  // The big fleet: the same processes, each with more workers.
  const perProcess = flags.fleet / flags.workers;
  started = Date.now();
  await Promise.all(processes.map((p) => p.grow(perProcess - 1)));
  line(
    `grew to ${flags.fleet} workers (${flags.workers} processes x ${perProcess}) in ${ms(Date.now() - started)}`,
  );
  const idle100 = await idleWindow(env, flags.idleSeconds);
  const big = await annealBurst(env, burstRequests(flags.runs));
  const executions = (await Promise.all(processes.map((p) => p.report()))).flatMap(
    (r) => r.executions,
  );

  // --- checks --------------------------------------------------------------------------------
  const runs = [
    ...warmUp.submitted,
    ...anneal.submitted,
    ...priority.submitted,
    ...capped,
    ...counted,
    ...big.submitted,
  ];
  const baselineIds = new Set([...baselineWarmUp.ids, ...baseline.ids, ...baselineCounted]);
  const once = exactlyOnce(
    runs.map((s) => s.id),
    executions.filter((e) => !baselineIds.has(e.runId)),
  );
  const onceBaseline = exactlyOnce(
    [...baselineIds],
    executions.filter((e) => baselineIds.has(e.runId)),
  );
  const onceOk = onceHolds(once) && onceHolds(onceBaseline);
  failed ||= !onceOk;
  line();
  line(
    `exactly once   ${once.executedOnce}/${once.expected} runs executed once (plain BullMQ: ` +
      `${onceBaseline.executedOnce}/${onceBaseline.expected} jobs); repeated ${once.repeated.length}, ` +
      `missing ${once.missing.length}, unknown ${once.unknown.length}  ${verdict(onceOk)}`,
  );
  for (const { runId, times } of once.repeated.slice(0, 5))
    line(`  ${runId} executed ${times} times`);

  const priorityOf = new Map(priority.submitted.map((s) => [s.id, s.priority]));
  const firstFree = Math.min(
    ...executions.filter((e) => priority.blockers.has(e.runId)).map((e) => e.endMs),
  );
  const together = priority.queuedAllMs < firstFree;
  const perPool = [...priority.starts].map(([pool, starts]) => ({
    pool,
    starts,
    ...priorityOrder(starts, (id) => priorityOf.get(id) ?? 0, slots10.get(pool) ?? 1),
  }));
  const priorityOk =
    together &&
    perPool.length === POOLS.length &&
    perPool.every((p) => p.maxOvertaken <= p.allowed);
  failed ||= !priorityOk;
  line(
    `priorities     ${together ? 'low (10) then high (90) runs queued together behind busy slots' : 'NOT all queued before the first slot freed'}; ` +
      perPool
        .map(
          (p) =>
            `${p.pool}: ${p.starts.length} started, ${p.inversions} inverted pairs, ` +
            `a low run overtaken by <= ${p.maxOvertaken} high (allowed ${p.allowed} = slots - 1)`,
        )
        .join('; ') +
      `  ${verdict(priorityOk)}`,
  );

  const tenantOf = new Map(runs.map((s) => [s.id, s.tenant]));
  const concurrency = maxConcurrent(executions, (id) => tenantOf.get(id));
  const cappedMax = concurrency.get(CAPPED_TENANT) ?? 0;
  const capsOk =
    [...concurrency].every(([tenant, max]) => max <= (fleet.caps[tenant] ?? 0)) &&
    cappedMax === CAPPED_LIMIT;
  failed ||= !capsOk;
  line(
    `tenant caps    ${[...concurrency]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([t, max]) => `${t}: <= ${max} running at once (cap ${fleet.caps[t]})`)
      .join(
        '; ',
      )}${cappedMax === CAPPED_LIMIT ? '' : ' — the capped tenant never reached its cap'}  ${verdict(capsOk)}`,
  );

  const a = anneal.burst;
  const b = baseline.burst;
  const ratio = a.runsPerSecond / b.runsPerSecond;
  line();
  line(
    `throughput     Anneal, REST -> outbox -> BullMQ -> worker: ${flags.runs} runs in ${a.seconds.toFixed(2)} s ` +
      `(all submitted after ${a.submitSeconds.toFixed(2)} s) = ${a.runsPerSecond.toFixed(0)} runs/s`,
  );
  line(
    `               plain BullMQ, addBulk -> Worker, empty jobs: ${flags.runs} jobs in ${b.seconds.toFixed(2)} s ` +
      `(added after ${b.submitSeconds.toFixed(2)} s) = ${b.runsPerSecond.toFixed(0)} jobs/s`,
  );
  line(
    `               ratio ${(100 * ratio).toFixed(1)}% — goal >= ${100 * GOAL}%: ${ratio >= GOAL ? 'MET' : 'MISSED'}`,
  );
  line(
    `latency        queued -> started: Anneal p50 ${ms(a.latency.p50)}, p99 ${ms(a.latency.p99)}; ` +
      `plain BullMQ p50 ${ms(b.latency.p50)}, p99 ${ms(b.latency.p99)} (bursts: both include the backlog)`,
  );
  line(
    `               ${flags.fleet} workers: Anneal ${big.burst.runsPerSecond.toFixed(0)} runs/s, ` +
      `p50 ${ms(big.burst.latency.p50)}, p99 ${ms(big.burst.latency.p99)}`,
  );
  line(cpuLine(`Anneal, ${flags.workers} workers`, a));
  line(cpuLine(`Anneal, ${flags.fleet} workers`, big.burst));
  line(cpuLine('plain BullMQ', b));
  line();
  for (const row of formatLoad([
    { name: `idle, ${flags.workers} workers`, workers: flags.workers, load: idle10 },
    { name: `idle, ${flags.fleet} workers`, workers: flags.fleet, load: idle100 },
    {
      name: `busy, ${flags.workers} workers`,
      workers: flags.workers,
      load: a.load,
      runs: flags.runs,
    },
    {
      name: `busy, ${flags.fleet} workers`,
      workers: flags.fleet,
      load: big.burst.load,
      runs: flags.runs,
    },
    {
      name: `plain BullMQ, ${flags.workers}`,
      workers: flags.workers,
      load: b.load,
      runs: flags.runs,
    },
  ]))
    line(row);
  if (flags.fleet > flags.workers) {
    const slope =
      (idle100.commands / idle100.seconds - idle10.commands / idle10.seconds) /
      (flags.fleet - flags.workers);
    line(
      `idle: Redis commands/s added per worker (${flags.workers} -> ${flags.fleet} workers): ${slope.toFixed(2)}`,
    );
  }
  line();
  line(countLine('Anneal, per run', perRun, COUNTED_RUNS));
  line(countLine('plain BullMQ, per job', perJob, COUNTED_RUNS));
  line(`load average at the end: ${load1()}`);
} catch (error) {
  failed = true;
  console.error(error);
} finally {
  await Promise.all(processes.map((p) => p.stop()));
  await control.stop();
  await queues.close();
  await Promise.all(
    [...baselineQueues.add.values(), ...baselineQueues.observe.values()].map((q) => q.close()),
  );
  if (!redis.private) await deleteKeysWithPrefix(client, prefix);
  await Promise.all([client, info, queueConnection, baselineConnection].map((c) => c.quit()));
  await redis.close();
  await rm(dir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
