// Injectable time: production uses real timers; tests pass fakes so nothing sleeps.

/** Waits `ms` (rejecting with the signal's reason when it aborts first). */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/** Uniform numbers in [0, 1) (jitter); seeded, never Math.random. */
export type Rng = () => number;

export interface Timers {
  sleep: Sleep;
  /** Monotonic milliseconds (bounded waits). */
  now: () => number;
  /** A signal that aborts after `ms` (per-request timeouts). */
  timeoutSignal: (ms: number) => AbortSignal;
}

export const realSleep: Sleep = (ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });

export const realTimers: Timers = {
  sleep: realSleep,
  now: () => performance.now(),
  // AbortSignal.timeout takes whole milliseconds (a deadline minus now is fractional).
  timeoutSignal: (ms) => AbortSignal.timeout(Math.max(0, Math.ceil(ms))),
};

/** mulberry32: a small seeded PRNG, good enough for retry jitter. */
export function seededRng(seed: number): Rng {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Periodic callbacks (health checks, heartbeats); injectable so tests drive ticks. */
export interface Scheduler {
  every(ms: number, tick: () => void): { cancel(): void };
}

export const realScheduler: Scheduler = {
  every(ms, tick) {
    const handle = setInterval(tick, ms);
    handle.unref();
    return { cancel: () => clearInterval(handle) };
  },
};

/** One signal that aborts when any source does. Unlike `AbortSignal.any`, listeners on
 * long-lived sources (an engine's lifetime) are removed by `dispose`, so nothing accumulates
 * over millions of requests. */
export function linkSignals(...sources: Array<AbortSignal | undefined>): {
  signal: AbortSignal;
  dispose: () => void;
} {
  const controller = new AbortController();
  const present = sources.filter((s): s is AbortSignal => s !== undefined);
  const aborted = present.find((s) => s.aborted);
  if (aborted) {
    controller.abort(aborted.reason);
    return { signal: controller.signal, dispose: () => {} };
  }
  const listeners = present.map((source) => {
    const onAbort = (): void => controller.abort(source.reason);
    source.addEventListener('abort', onAbort, { once: true });
    return () => source.removeEventListener('abort', onAbort);
  });
  return { signal: controller.signal, dispose: () => listeners.forEach((remove) => remove()) };
}
