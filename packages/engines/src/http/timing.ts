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

/** The requests linked to a source signal, behind that source's one listener. */
interface Fanout {
  linked: Set<AbortController>;
  onAbort: () => void;
}

const fanouts = new WeakMap<AbortSignal, Fanout>();

/** One signal that aborts when any source does. Unlike `AbortSignal.any`, nothing stays on a
 * long-lived source (an engine's lifetime, a step's signal) once every signal linked to it is
 * disposed, so nothing accumulates over millions of requests; and a source carries one listener
 * however many requests share it (no MaxListenersExceededWarning past 10 at once). */
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
  for (const source of present) attach(source, controller);
  return {
    signal: controller.signal,
    dispose: () => present.forEach((source) => detach(source, controller)),
  };
}

function attach(source: AbortSignal, controller: AbortController): void {
  let fanout = fanouts.get(source);
  if (fanout === undefined) {
    const linked = new Set<AbortController>();
    const onAbort = (): void => {
      fanouts.delete(source);
      for (const dependent of [...linked]) dependent.abort(source.reason);
      linked.clear();
    };
    fanout = { linked, onAbort };
    fanouts.set(source, fanout);
    source.addEventListener('abort', onAbort, { once: true });
  }
  fanout.linked.add(controller);
}

function detach(source: AbortSignal, controller: AbortController): void {
  const fanout = fanouts.get(source);
  if (fanout === undefined || !fanout.linked.delete(controller) || fanout.linked.size > 0) return;
  fanouts.delete(source);
  source.removeEventListener('abort', fanout.onAbort);
}
