// Injectable timing for contract tests: sleeps return at once (and are recorded), timeouts
// fire when the test says so. Nothing in the tests waits on a real clock.
import type { Scheduler, Timers } from '../src/http/timing.ts';

export interface FakeTimers {
  timers: Timers;
  /** Every requested sleep, in ms. */
  sleeps: number[];
  /** Abort every per-request timeout signal handed out so far. */
  fireTimeouts(): void;
  /** Advance the fake monotonic clock. */
  advance(ms: number): void;
}

export function fakeTimers(): FakeTimers {
  const sleeps: number[] = [];
  const pending: AbortController[] = [];
  let clock = 0;
  return {
    sleeps,
    timers: {
      sleep: async (ms, signal) => {
        signal?.throwIfAborted();
        sleeps.push(ms);
        clock += ms;
      },
      now: () => clock,
      timeoutSignal: () => {
        const controller = new AbortController();
        pending.push(controller);
        return controller.signal;
      },
    },
    fireTimeouts: () => {
      for (const controller of pending.splice(0)) controller.abort(new Error('timeout'));
    },
    advance: (ms) => {
      clock += ms;
    },
  };
}

/** A scheduler whose ticks the test runs by hand. */
export function manualScheduler(): Scheduler & { tick(): void; active: number } {
  const tasks = new Set<() => void>();
  return {
    every(_ms, tick) {
      tasks.add(tick);
      return { cancel: () => void tasks.delete(tick) };
    },
    tick: () => tasks.forEach((task) => task()),
    get active() {
      return tasks.size;
    },
  };
}
