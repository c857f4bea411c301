// Injectable timing for contract tests: sleeps return at once (and are recorded), timeouts
// fire when the test says so. Nothing in the tests waits on a real clock.
import type { Scheduler, Timers } from '../src/http/timing.ts';

export interface FakeTimers {
  timers: Timers;
  /** Every requested sleep, in ms. */
  sleeps: number[];
  /** Every requested per-request timeout, in ms. */
  timeouts: number[];
  /** Abort every per-request timeout signal handed out so far. */
  fireTimeouts(): void;
  /** Advance the fake monotonic clock. */
  advance(ms: number): void;
}

export interface FakeTimerOptions {
  /** When the fake clock moves (sleep or advance), abort the timeout signals whose time has
   * come, as a real clock would: e.g. a server that holds a call longer than the client's
   * timeout (default false: timeouts fire only on `fireTimeouts`). */
  expireTimeouts?: boolean;
}

export function fakeTimers(options: FakeTimerOptions = {}): FakeTimers {
  const sleeps: number[] = [];
  const timeouts: number[] = [];
  let pending: Array<{ controller: AbortController; at: number }> = [];
  let clock = 0;
  const expire = (): void => {
    if (!options.expireTimeouts) return;
    const due = pending.filter((p) => p.at <= clock);
    pending = pending.filter((p) => p.at > clock);
    for (const { controller } of due) controller.abort(new Error('timeout'));
  };
  return {
    sleeps,
    timeouts,
    timers: {
      sleep: async (ms, signal) => {
        signal?.throwIfAborted();
        sleeps.push(ms);
        clock += ms;
        expire();
      },
      now: () => clock,
      timeoutSignal: (ms) => {
        const controller = new AbortController();
        timeouts.push(ms);
        pending.push({ controller, at: clock + ms });
        return controller.signal;
      },
    },
    fireTimeouts: () => {
      for (const { controller } of pending.splice(0)) controller.abort(new Error('timeout'));
    },
    advance: (ms) => {
      clock += ms;
      expire();
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
