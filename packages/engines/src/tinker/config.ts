// Configuration of one named Tinker-compatible trainer endpoint (passed in; no env reads).
import type { RetryPolicy } from '../http/retry.ts';
import type { TrainerCapabilities } from '../types.ts';

/** How a future is awaited (docs/engines.md "Futures"). There is no retry count: a future is
 * polled until it resolves, fails, or its operation's deadline passes. */
export interface FuturePollPolicy {
  /** Wait after a "still pending" answer (408 or `try_again`), default 100 ms; grows by
   * `factor` up to `maxDelayMs`. SkyRL already held the call for up to 300 s before its 408. */
  initialDelayMs: number;
  factor: number;
  maxDelayMs: number;
  /** Timeout of one `retrieve_future` call (default 330 s). Must exceed the server's hold
   * (SkyRL answers 408 only after holding the call 300 s), else every poll times out. */
  callTimeoutMs: number;
  /** One deadline per operation, from its submission to its result (default 1 h). Network
   * errors and 5xx while polling are retried with backoff until then. */
  deadlineMs: number;
}

/** SkyRL holds `retrieve_future` this long before answering 408 (docs/engines.md "Futures"). */
export const SKYRL_RETRIEVE_HOLD_MS = 300_000;

/** What every client of a Tinker-compatible endpoint needs: the trainer and the hosted
 * sampler (sampling.ts) alike. */
export interface TinkerConnectionConfig {
  /** Operator-registered endpoint name (appears in every error). */
  name: string;
  /** Server root; routes live under `/api/v1`. */
  baseUrl: string;
  /** Sent as `X-API-Key`. */
  apiKey?: string;
  tags?: string[];
  /** Reported as `sdk_version`; we speak the subset of tinker SDK 0.24.1 (default). */
  sdkVersion?: string;
  userMetadata?: Record<string, unknown>;
  /** Session heartbeat period (default 10 s; servers unload after ~300 s without one).
   * 0 = only explicit `heartbeat()` calls. */
  heartbeatIntervalMs?: number;
  /** Per-HTTP-call timeout of every call except `retrieve_future` (default 60 s). */
  requestTimeoutMs?: number;
  /** Default: 5 attempts, 500 ms base delay, 10 s cap. */
  retry?: Partial<RetryPolicy>;
  futurePoll?: Partial<FuturePollPolicy>;
  /** Seed of the retry-jitter RNG (default 0). */
  jitterSeed?: number;
}

export interface TinkerEndpointConfig extends TinkerConnectionConfig {
  /** What this backend can run: kinds, losses, and its token-loss reduction. */
  capabilities: TrainerCapabilities;
  /** forward / forward_backward batches larger than this go in several requests
   * (default 128, the tinker SDK's chunk size). */
  maxDatumsPerRequest?: number;
}

export interface ResolvedTinkerConnection {
  name: string;
  baseUrl: string;
  apiKey: string | undefined;
  tags: string[];
  sdkVersion: string;
  userMetadata: Record<string, unknown> | undefined;
  heartbeatIntervalMs: number;
  requestTimeoutMs: number;
  retry: RetryPolicy;
  futurePoll: FuturePollPolicy;
  jitterSeed: number;
}

export interface ResolvedTinkerConfig extends ResolvedTinkerConnection {
  capabilities: TrainerCapabilities;
  maxDatumsPerRequest: number;
}

export function resolveTinkerConfig(config: TinkerEndpointConfig): ResolvedTinkerConfig {
  const connection = resolveTinkerConnection(config);
  const where = `trainer endpoint '${config.name}'`;
  if (config.capabilities.losses.length === 0) {
    throw new TypeError(`${where}: \`capabilities.losses\` is empty`);
  }
  const chunk = config.maxDatumsPerRequest ?? 128;
  if (!Number.isFinite(chunk) || chunk < 1) {
    throw new RangeError(`${where}: \`maxDatumsPerRequest\` must be >= 1, got ${chunk}`);
  }
  return {
    ...connection,
    capabilities: config.capabilities,
    maxDatumsPerRequest: Math.floor(chunk),
  };
}

export function resolveTinkerConnection(config: TinkerConnectionConfig): ResolvedTinkerConnection {
  if (!config.name) throw new TypeError('trainer endpoint: `name` is required');
  const where = `trainer endpoint '${config.name}'`;
  let url: URL;
  try {
    url = new URL(config.baseUrl);
  } catch {
    throw new TypeError(`${where}: baseUrl ${JSON.stringify(config.baseUrl)} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TypeError(`${where}: baseUrl ${JSON.stringify(config.baseUrl)} is not http(s)`);
  }
  const number = (
    field: string,
    value: number | undefined,
    fallback: number,
    min: number,
  ): number => {
    const chosen = value ?? fallback;
    if (!Number.isFinite(chosen) || chosen < min) {
      throw new RangeError(`${where}: \`${field}\` must be >= ${min}, got ${chosen}`);
    }
    return chosen;
  };
  const attempts = number('retry.attempts', config.retry?.attempts, 5, 1);
  if (!Number.isInteger(attempts)) {
    throw new RangeError(`${where}: \`retry.attempts\` must be an integer, got ${attempts}`);
  }
  return {
    name: config.name,
    baseUrl: config.baseUrl.replace(/\/+$/, ''),
    apiKey: config.apiKey,
    tags: config.tags ?? ['anneal'],
    sdkVersion: config.sdkVersion ?? '0.24.1',
    userMetadata: config.userMetadata,
    heartbeatIntervalMs: number('heartbeatIntervalMs', config.heartbeatIntervalMs, 10_000, 0),
    requestTimeoutMs: number('requestTimeoutMs', config.requestTimeoutMs, 60_000, 1),
    retry: {
      attempts,
      baseDelayMs: number('retry.baseDelayMs', config.retry?.baseDelayMs, 500, 0),
      maxDelayMs: number('retry.maxDelayMs', config.retry?.maxDelayMs, 10_000, 0),
    },
    futurePoll: {
      initialDelayMs: number(
        'futurePoll.initialDelayMs',
        config.futurePoll?.initialDelayMs,
        100,
        0,
      ),
      factor: number('futurePoll.factor', config.futurePoll?.factor, 1.5, 1),
      maxDelayMs: number('futurePoll.maxDelayMs', config.futurePoll?.maxDelayMs, 2_000, 0),
      callTimeoutMs: number(
        'futurePoll.callTimeoutMs',
        config.futurePoll?.callTimeoutMs,
        SKYRL_RETRIEVE_HOLD_MS + 30_000,
        1,
      ),
      deadlineMs: number('futurePoll.deadlineMs', config.futurePoll?.deadlineMs, 3_600_000, 1),
    },
    jitterSeed: config.jitterSeed ?? 0,
  };
}
