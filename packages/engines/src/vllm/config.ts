// Configuration of one named vLLM endpoint (parsed by the app, passed in; no env reads).
import type { ArchiveLimits } from '../adapters/archive.ts';
import type { RetryPolicy } from '../http/retry.ts';
import { VLLM_DEFAULT_MAX_LORA_RANK } from './endpoint-checks.ts';
import type { SamplerWeights } from '../types.ts';

export interface VllmEndpointConfig {
  /** Operator-registered endpoint name (appears in every error). */
  name: string;
  /** Base URLs of the replicas serving this endpoint, e.g. `http://gpu-3:8000`. */
  replicas: readonly string[];
  /** Served model name: the default `model` of sample requests. */
  model: string;
  /** Sent as `Authorization: Bearer …` (vLLM `--api-key`). */
  apiKey?: string;
  /** Requests in flight across all replicas; the rest queue (default 64). */
  maxInFlight?: number;
  /** The replicas' `--scheduling-policy` (vLLM's default `fcfs`). Under `priority` each
   * request carries its `SampleRequest.priority`; under `fcfs` none is sent (vLLM's v1 engine
   * would accept and ignore it, docs/engines.md "Request priority"). */
  schedulingPolicy?: 'fcfs' | 'priority';
  /** Per-attempt timeout of a generation request (default 10 min). */
  requestTimeoutMs?: number;
  /** Default: 4 attempts, 500 ms base delay, 10 s cap. */
  retry?: Partial<RetryPolicy>;
  /** Period of `/health` checks; 0 = only explicit `checkHealth()` calls (default 10 s). */
  healthCheckIntervalMs?: number;
  /** Timeout of one `/health` or weight-sync call (default 5 s / 2 min). */
  healthTimeoutMs?: number;
  syncTimeoutMs?: number;
  /** Consecutive 5xx replies before a replica is dropped (connection loss drops at once). Default 2. */
  failuresBeforeDrop?: number;
  /** Model window: when set, `max_tokens` is clamped so prompt + completion fit, and a
   * prompt that already fills it is a `context_overflow` rollout without a request. */
  maxModelLen?: number;
  /** Maps sampler weights (often `tinker://…`) to a path every replica can read. */
  resolveLoraPath?: (weights: SamplerWeights) => string;
  /** Seed of the retry-jitter RNG (default 0). */
  jitterSeed?: number;
  /** The replicas' `--max-lora-rank` (vLLM's default 16): an adapter of a higher rank is
   * refused before any replica is asked to load it. */
  maxLoraRank?: number;
  /** Before loading, unpack sampler-weight archives (`<path>.tar.gz`) and check what the
   * directory holds (LoRA adapter, rank) when this process can see it (default true). */
  prepareWeights?: boolean;
  /** Caps for unpacking (default 8 GiB total and per entry, 10 000 entries). */
  archiveLimits?: ArchiveLimits;
  /** Threads that read completion replies (reply-readers.ts), so reading them leaves the event
   * loop to the rest of the run; 0 (the default): read on the event loop. */
  readerThreads?: number;
}

export interface ResolvedVllmConfig {
  name: string;
  replicas: string[];
  model: string;
  apiKey: string | undefined;
  maxInFlight: number;
  schedulingPolicy: 'fcfs' | 'priority';
  requestTimeoutMs: number;
  retry: RetryPolicy;
  healthCheckIntervalMs: number;
  healthTimeoutMs: number;
  syncTimeoutMs: number;
  failuresBeforeDrop: number;
  maxModelLen: number | undefined;
  resolveLoraPath: (weights: SamplerWeights) => string;
  jitterSeed: number;
  maxLoraRank: number;
  prepareWeights: boolean;
  archiveLimits: ArchiveLimits;
  readerThreads: number;
}

/** The most reply-reader threads an endpoint starts. */
export const MAX_READER_THREADS = 64;

export function resolveVllmConfig(config: VllmEndpointConfig): ResolvedVllmConfig {
  const where = `vLLM endpoint '${config.name}'`;
  if (!config.name) throw new TypeError('vLLM endpoint: `name` is required');
  if (!config.model) throw new TypeError(`${where}: \`model\` is required`);
  if (config.replicas.length === 0) throw new TypeError(`${where}: \`replicas\` is empty`);
  const replicas = config.replicas.map((url, i) => {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new TypeError(`${where}: replicas[${i}] ${JSON.stringify(url)} is not a URL`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new TypeError(`${where}: replicas[${i}] ${JSON.stringify(url)} is not http(s)`);
    }
    return url.replace(/\/+$/, '');
  });
  if (new Set(replicas).size !== replicas.length) {
    throw new TypeError(`${where}: \`replicas\` lists a URL twice`);
  }
  const positive = (field: string, value: number | undefined, fallback: number): number => {
    const chosen = value ?? fallback;
    if (!Number.isFinite(chosen) || chosen <= 0) {
      throw new RangeError(`${where}: \`${field}\` must be > 0, got ${chosen}`);
    }
    return chosen;
  };
  const interval = config.healthCheckIntervalMs ?? 10_000;
  if (!Number.isFinite(interval) || interval < 0) {
    throw new RangeError(`${where}: \`healthCheckIntervalMs\` must be >= 0, got ${interval}`);
  }
  const attempts = positive('retry.attempts', config.retry?.attempts, 4);
  if (!Number.isInteger(attempts)) {
    throw new RangeError(`${where}: \`retry.attempts\` must be an integer, got ${attempts}`);
  }
  return {
    name: config.name,
    replicas,
    model: config.model,
    apiKey: config.apiKey,
    maxInFlight: Math.floor(positive('maxInFlight', config.maxInFlight, 64)),
    schedulingPolicy: schedulingPolicyOf(where, config.schedulingPolicy),
    requestTimeoutMs: positive('requestTimeoutMs', config.requestTimeoutMs, 600_000),
    retry: {
      attempts,
      baseDelayMs: config.retry?.baseDelayMs ?? 500,
      maxDelayMs: config.retry?.maxDelayMs ?? 10_000,
    },
    healthCheckIntervalMs: interval,
    healthTimeoutMs: positive('healthTimeoutMs', config.healthTimeoutMs, 5_000),
    syncTimeoutMs: positive('syncTimeoutMs', config.syncTimeoutMs, 120_000),
    failuresBeforeDrop: Math.floor(positive('failuresBeforeDrop', config.failuresBeforeDrop, 2)),
    maxModelLen:
      config.maxModelLen === undefined ? undefined : positive('maxModelLen', config.maxModelLen, 1),
    resolveLoraPath: config.resolveLoraPath ?? defaultLoraPath(where),
    jitterSeed: config.jitterSeed ?? 0,
    maxLoraRank: loraRankLimit(where, config.maxLoraRank),
    prepareWeights: config.prepareWeights ?? true,
    archiveLimits: { ...config.archiveLimits },
    readerThreads: readerThreadsOf(where, config.readerThreads),
  };
}

function schedulingPolicyOf(where: string, value: string | undefined): 'fcfs' | 'priority' {
  // vLLM's default (vllm/config/scheduler.py `policy`).
  if (value === undefined || value === 'fcfs' || value === 'priority') return value ?? 'fcfs';
  throw new RangeError(`${where}: \`schedulingPolicy\` must be fcfs or priority, got ${value}`);
}

function loraRankLimit(where: string, value: number | undefined): number {
  const chosen = value ?? VLLM_DEFAULT_MAX_LORA_RANK;
  if (!Number.isInteger(chosen) || chosen < 1) {
    throw new RangeError(`${where}: \`maxLoraRank\` must be an integer >= 1, got ${chosen}`);
  }
  return chosen;
}

/** Identity for plain paths; `tinker://` paths need an operator mapping to shared storage. */
function defaultLoraPath(where: string): (weights: SamplerWeights) => string {
  return (weights) => {
    if (weights.path.startsWith('tinker://')) {
      throw new TypeError(
        `${where}: cannot load ${weights.path} directly; configure resolveLoraPath (operator ` +
          "config: the endpoint's `adapters.root`) to map trainer checkpoints to shared storage " +
          'the replicas can read',
      );
    }
    return weights.path;
  };
}

function readerThreadsOf(where: string, threads: number | undefined): number {
  const chosen = threads ?? 0;
  if (!Number.isInteger(chosen) || chosen < 0 || chosen > MAX_READER_THREADS) {
    throw new RangeError(
      `${where}: \`readerThreads\` must be an integer from 0 to ${MAX_READER_THREADS}, got ${chosen}`,
    );
  }
  return chosen;
}
