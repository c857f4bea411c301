// The worker's configuration: one frozen object built once at start-up (from the environment by
// env.ts, or in-process by `anneal up` / tests through defineWorkerConfig) and passed down.
import { hostname } from 'node:os';
import path from 'node:path';
import {
  DEFAULT_WORKER_TTL_SECONDS,
  JOB_CATALOGUE,
  RESOURCE_NAME_PATTERN,
  WORKER_ID_PATTERN,
  localOperatorConfig,
  type OperatorConfig,
} from '@anneal/protocol';
import { DEFAULT_ARTIFACT_DIR, DEFAULT_REPLICATION, type ReplicationOptions } from '@anneal/store';
import type { LogLevel } from '@anneal/telemetry';
import { WorkerConfigError } from './errors.ts';

export interface WorkerConfig {
  redisUrl: string;
  /** Store key prefix (a Redis Cluster hash tag, `{anneal}` by default). */
  keyPrefix: string;
  pool: string;
  workerId: string;
  /** Runs this worker holds at once (BullMQ concurrency). */
  slots: number;
  /** The operator config; in local mode a synthesized one with embedded engines only. */
  operatorConfig: OperatorConfig;
  /** Path of the operator config file; null = local mode (embedded engines). */
  configPath: string | null;
  /** Root under which each run gets `<artifactDir>/runs/<runId>/` (runArtifactDir). */
  artifactDir: string;
  metrics: {
    /** /metrics port; 0 = ephemeral (the handle reports the real URL). */
    port: number;
    host: string;
    /** Pushgateway base URL for short-lived workers; null = scrape only. */
    pushgatewayUrl: string | null;
    pushIntervalSeconds: number;
    /** How long a finished run's series stay exported (so the last step gets scraped). */
    runSeriesGraceSeconds: number;
  };
  /** SIGTERM: seconds to bring runs to a step boundary, checkpoint and hand them back. */
  shutdownGraceSeconds: number;
  /** V8's heap growing factor for the process the worker runs in, as a percent of growth past
   * what a full collection kept (runtime/heap.ts); 0 leaves V8 its own choice. */
  heapGrowingPercent: number;
  heartbeatSeconds: number;
  /** Registry record TTL: a worker silent this long counts as lost. */
  heartbeatTtlSeconds: number;
  queue: { lockDurationMs: number; stalledIntervalMs: number; maxStalledCount: number };
  /** Step commits, checkpoint pointers and state changes count once this many replicas hold
   * them (docs/reliability.md "What a failover keeps"); a write its replicas do not confirm is
   * sent again for `retryForMs` before the attempt fails. */
  replication: Readonly<Required<Omit<ReplicationOptions, 'probeMs'>>>;
  logLevel: LogLevel;
  /** Values of the env vars the operator config names as secrets (`apiKeyEnv`). */
  secrets: Readonly<Record<string, string>>;
}

/** A write its replicas do not confirm is sent again this long before the run's attempt fails
 * (a replica that lags or restarts briefly does not cost the run an attempt). */
export const DEFAULT_REPLICATION_RETRY_MS = 60_000;

/** A factor of 4: V8's own largest (its dynamic choice never exceeds it), so the worker never
 * collects more often than V8 would at its most relaxed, and collects far less often than the
 * 1.1–1.5 V8 picks for its ArrayBuffer-heavy allocation (runtime/heap.ts; docs/performance.md
 * "Orchestrator overhead: the profiler out of the measure"). */
export const DEFAULT_HEAP_GROWING_PERCENT = 300;
export const MAX_HEAP_GROWING_PERCENT = 1000;

/** Hash of no token: the worker never authenticates requests; the local config needs one. */
const NO_TOKEN_SHA256 = '0'.repeat(64);

/** Local mode: the single-tenant embedded config, with `pool` declared (tests use unique pools). */
export function localWorkerOperatorConfig(pool: string, slots: number): OperatorConfig {
  const local = localOperatorConfig(NO_TOKEN_SHA256);
  return { ...local, pools: { [pool]: { slots } }, defaults: { ...local.defaults, pool } };
}

/** Env var names the operator config refers to for secrets (API keys). */
export function secretEnvNames(config: OperatorConfig): string[] {
  const names = new Set<string>();
  for (const endpoint of Object.values(config.inference)) {
    if (endpoint.type !== 'embedded' && endpoint.apiKeyEnv) names.add(endpoint.apiKeyEnv);
  }
  for (const endpoint of Object.values(config.trainers)) {
    if (endpoint.type === 'tinker' && endpoint.apiKeyEnv) names.add(endpoint.apiKeyEnv);
  }
  for (const judge of Object.values(config.judges)) {
    if (judge.apiKeyEnv) names.add(judge.apiKeyEnv);
  }
  return [...names].sort();
}

export type WorkerConfigInput = Partial<Omit<WorkerConfig, 'metrics' | 'queue' | 'replication'>> & {
  metrics?: Partial<WorkerConfig['metrics']>;
  queue?: Partial<WorkerConfig['queue']>;
  replication?: Partial<WorkerConfig['replication']>;
  /** Slots from ANNEAL_SLOTS; else the operator config's pool slots. */
  slots?: number;
};

function check(ok: boolean, field: string, message: string): void {
  if (!ok) throw new WorkerConfigError(field, message);
}

/** The one defaults function: fills every omitted field, validates, freezes. */
export function defineWorkerConfig(input: WorkerConfigInput = {}): Readonly<WorkerConfig> {
  const pool = input.pool ?? 'default';
  check(new RegExp(RESOURCE_NAME_PATTERN).test(pool), 'pool', `'${pool}' is not a pool name`);
  const configPath = input.configPath ?? null;
  const operatorConfig = input.operatorConfig ?? localWorkerOperatorConfig(pool, input.slots ?? 1);
  const poolConfig = operatorConfig.pools[pool];
  check(
    poolConfig !== undefined,
    'pool',
    `pool '${pool}' is not declared in the operator config (declared: ${Object.keys(operatorConfig.pools).join(', ')})`,
  );
  const slots = input.slots ?? poolConfig?.slots ?? 1;
  check(Number.isInteger(slots) && slots >= 1, 'slots', `must be an integer >= 1, got ${slots}`);
  const workerId = input.workerId ?? `${hostname()}-${process.pid}`;
  check(new RegExp(WORKER_ID_PATTERN).test(workerId), 'workerId', `'${workerId}' is not valid`);
  const heartbeatSeconds = input.heartbeatSeconds ?? 10;
  check(heartbeatSeconds > 0, 'heartbeatSeconds', `must be > 0, got ${heartbeatSeconds}`);
  const grace = input.shutdownGraceSeconds ?? 30;
  check(grace >= 0, 'shutdownGraceSeconds', `must be >= 0, got ${grace}`);
  const heapGrowingPercent = input.heapGrowingPercent ?? DEFAULT_HEAP_GROWING_PERCENT;
  check(
    Number.isInteger(heapGrowingPercent) &&
      heapGrowingPercent >= 0 &&
      heapGrowingPercent <= MAX_HEAP_GROWING_PERCENT,
    'heapGrowingPercent',
    `must be an integer 0..${MAX_HEAP_GROWING_PERCENT}, got ${heapGrowingPercent}`,
  );
  const queue = {
    lockDurationMs: input.queue?.lockDurationMs ?? JOB_CATALOGUE.run.lockDurationMs,
    stalledIntervalMs: input.queue?.stalledIntervalMs ?? 30_000,
    maxStalledCount: input.queue?.maxStalledCount ?? JOB_CATALOGUE.run.maxStalledCount,
  };
  check(queue.lockDurationMs >= 500, 'queue.lockDurationMs', 'must be >= 500 ms');
  check(queue.stalledIntervalMs >= 200, 'queue.stalledIntervalMs', 'must be >= 200 ms');
  check(
    Number.isInteger(queue.maxStalledCount) && queue.maxStalledCount >= 0,
    'queue.maxStalledCount',
    `must be an integer >= 0, got ${queue.maxStalledCount}`,
  );
  const replication = {
    replicas: input.replication?.replicas ?? DEFAULT_REPLICATION.replicas,
    timeoutMs: input.replication?.timeoutMs ?? DEFAULT_REPLICATION.timeoutMs,
    retryForMs: input.replication?.retryForMs ?? DEFAULT_REPLICATION_RETRY_MS,
  };
  check(
    replication.replicas === 'auto' ||
      (Number.isInteger(replication.replicas) && replication.replicas >= 0),
    'replication.replicas',
    `must be 'auto' or an integer >= 0, got ${String(replication.replicas)}`,
  );
  check(replication.timeoutMs >= 1, 'replication.timeoutMs', 'must be >= 1 ms');
  check(replication.retryForMs >= 0, 'replication.retryForMs', 'must be >= 0 ms');
  const metrics = {
    port: input.metrics?.port ?? 9464,
    host: input.metrics?.host ?? '0.0.0.0',
    pushgatewayUrl: input.metrics?.pushgatewayUrl ?? null,
    pushIntervalSeconds: input.metrics?.pushIntervalSeconds ?? 15,
    runSeriesGraceSeconds: input.metrics?.runSeriesGraceSeconds ?? 60,
  };
  check(
    Number.isInteger(metrics.port) && metrics.port >= 0 && metrics.port <= 65535,
    'metrics.port',
    `must be 0..65535, got ${metrics.port}`,
  );
  const config: WorkerConfig = {
    redisUrl: input.redisUrl ?? 'redis://127.0.0.1:6379',
    keyPrefix: input.keyPrefix ?? '{anneal}',
    pool,
    workerId,
    slots,
    operatorConfig,
    configPath,
    artifactDir: path.resolve(input.artifactDir ?? DEFAULT_ARTIFACT_DIR),
    metrics: Object.freeze(metrics),
    shutdownGraceSeconds: grace,
    heapGrowingPercent,
    heartbeatSeconds,
    heartbeatTtlSeconds:
      input.heartbeatTtlSeconds ??
      Math.max(DEFAULT_WORKER_TTL_SECONDS, Math.ceil(heartbeatSeconds * 3)),
    queue: Object.freeze(queue),
    replication: Object.freeze(replication),
    logLevel: input.logLevel ?? 'info',
    secrets: Object.freeze({ ...(input.secrets ?? {}) }),
  };
  return Object.freeze(config);
}
