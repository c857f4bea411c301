// Retry policy, jitter and the concurrency limiter, without HTTP.
import { describe, expect, it } from 'vitest';
import { ENGINE_ERROR_CODES, EngineError } from './errors.ts';
import { ConcurrencyLimiter } from './limiter.ts';
import { backoffDelay, withRetry } from './retry.ts';
import { seededRng } from './timing.ts';

const transient = (): EngineError =>
  new EngineError(
    ENGINE_ERROR_CODES.http,
    { engine: 'vLLM', endpoint: 'e', status: 503 },
    'HTTP 503',
    {
      retryable: true,
    },
  );

describe('retries', () => {
  it('grows the delay cap exponentially, jittered within [cap/2, cap], up to maxDelayMs', () => {
    const policy = { attempts: 10, baseDelayMs: 100, maxDelayMs: 1000 };
    const rng = seededRng(1);
    for (let retry = 0; retry < 8; retry += 1) {
      const cap = Math.min(1000, 100 * 2 ** retry);
      const delay = backoffDelay(policy, retry, rng);
      expect(delay).toBeGreaterThanOrEqual(cap / 2);
      expect(delay).toBeLessThanOrEqual(cap);
    }
    expect(backoffDelay(policy, 0, () => 0)).toBe(50);
    expect(backoffDelay(policy, 20, () => 0.999999)).toBe(1000);
  });

  it('is deterministic for a seed', () => {
    const a = seededRng(42);
    const b = seededRng(42);
    const draws = Array.from({ length: 5 }, () => [a(), b()]);
    expect(draws.every(([x, y]) => x === y)).toBe(true);
    expect(new Set(draws.map(([x]) => x)).size).toBe(5);
  });

  it('retries retryable errors until attempts run out, then marks the count', async () => {
    const sleeps: number[] = [];
    let calls = 0;
    const error = await withRetry(
      async () => {
        calls += 1;
        throw transient();
      },
      {
        policy: { attempts: 4, baseDelayMs: 10, maxDelayMs: 100 },
        rng: () => 0.5,
        sleep: async (ms) => void sleeps.push(ms),
      },
    ).catch((e: unknown) => e as EngineError);
    expect(calls).toBe(4);
    expect(sleeps).toEqual([8, 15, 30]);
    expect(error.attempts).toBe(4);
    expect(error.message).toBe("vLLM endpoint 'e': HTTP 503 (gave up after 4 attempts)");
  });

  it('passes non-retryable errors straight through', async () => {
    let calls = 0;
    const plain = new Error('bad request');
    await expect(
      withRetry(
        async () => {
          calls += 1;
          throw plain;
        },
        {
          policy: { attempts: 4, baseDelayMs: 1, maxDelayMs: 1 },
          rng: () => 0,
          sleep: async () => {},
        },
      ),
    ).rejects.toBe(plain);
    expect(calls).toBe(1);
  });
});

describe('ConcurrencyLimiter', () => {
  it('runs at most `limit` tasks and hands slots over in FIFO order', async () => {
    const limiter = new ConcurrencyLimiter(2);
    const releases: Array<() => void> = [];
    const started: number[] = [];
    const task = (id: number) => () =>
      new Promise<number>((resolve) => {
        started.push(id);
        releases.push(() => resolve(id));
      });
    const flush = (): Promise<void> => new Promise<void>((r) => setImmediate(r));
    const runs = [1, 2, 3, 4].map((id) => limiter.run(task(id)));
    await flush();
    expect(started).toEqual([1, 2]);
    expect(limiter.queued).toBe(2);
    releases[0]?.();
    await flush();
    expect(started).toEqual([1, 2, 3]); // the freed slot went to the oldest waiter
    releases[1]?.();
    await flush();
    expect(started).toEqual([1, 2, 3, 4]);
    releases[2]?.();
    releases[3]?.();
    expect(await Promise.all(runs)).toEqual([1, 2, 3, 4]);
    expect(limiter.inFlight).toBe(0);
  });

  it('removes an aborted waiter from the queue', async () => {
    const limiter = new ConcurrencyLimiter(1);
    let release: () => void = () => {};
    const first = limiter.run(() => new Promise<void>((r) => (release = r)));
    const controller = new AbortController();
    const second = limiter.run(async () => 'never', controller.signal);
    expect(limiter.queued).toBe(1);
    controller.abort(new Error('cancelled'));
    await expect(second).rejects.toThrow('cancelled');
    expect(limiter.queued).toBe(0);
    release();
    await first;
    expect(limiter.inFlight).toBe(0);
  });
});
