// Bounded retries with exponential backoff + jitter (p-retry 7). p-retry decides when to stop;
// the delay is ours so that jitter uses a seeded RNG and tests inject `sleep` (no real waits).
import pRetry, { AbortError } from 'p-retry';
import { EngineError } from './errors.ts';
import type { Rng, Sleep } from './timing.ts';

export interface RetryPolicy {
  /** Total attempts including the first (>= 1). */
  attempts: number;
  /** Delay cap before the first retry; doubles each retry. */
  baseDelayMs: number;
  maxDelayMs: number;
}

export interface RetryInfo {
  /** The attempt that failed (1-based). */
  attempt: number;
  error: Error;
  delayMs: number;
}

export interface RetryOptions {
  policy: RetryPolicy;
  sleep: Sleep;
  rng: Rng;
  signal?: AbortSignal;
  /** Default: EngineErrors marked retryable (5xx, connection loss, timeouts). */
  isRetryable?: (error: unknown) => boolean;
  onRetry?: (info: RetryInfo) => void;
}

/** "Equal jitter": half the exponential cap, plus a uniform share of the other half. */
export function backoffDelay(policy: RetryPolicy, retryIndex: number, rng: Rng): number {
  const cap = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retryIndex);
  return Math.round(cap / 2 + (rng() * cap) / 2);
}

export const isRetryableEngineError = (error: unknown): boolean =>
  error instanceof EngineError && error.retryable;

export async function withRetry<T>(
  run: (attempt: number) => Promise<T>,
  options: RetryOptions,
): Promise<T> {
  const isRetryable = options.isRetryable ?? isRetryableEngineError;
  let attempts = 0;
  try {
    return await pRetry(
      async (attempt) => {
        attempts = attempt;
        try {
          return await run(attempt);
        } catch (error) {
          // Non-retryable failures (4xx, caller aborts) end the loop with the original error.
          if (!isRetryable(error)) throw new AbortError(asError(error));
          throw error;
        }
      },
      {
        retries: options.policy.attempts - 1,
        minTimeout: 0,
        signal: options.signal,
        onFailedAttempt: async ({ error, attemptNumber, retriesLeft, retriesConsumed }) => {
          if (retriesLeft <= 0) return;
          const delayMs = backoffDelay(options.policy, retriesConsumed, options.rng);
          options.onRetry?.({ attempt: attemptNumber, error, delayMs });
          await options.sleep(delayMs, options.signal);
        },
      },
    );
  } catch (error) {
    if (error instanceof EngineError && error.retryable) error.markAttempts(attempts);
    throw error;
  }
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
