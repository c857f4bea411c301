// What start-up has opened so far, to close again: each step registers its disposer as soon as
// its resource exists; a step that throws unwinds them in reverse order (so a failed start leaves
// no Redis connection or timer behind), and graceful shutdown runs the ones it has not already
// run itself, in the same reverse order.
import type { Logger } from '@anneal/telemetry';

export type Dispose<A extends unknown[]> = (...args: A) => Promise<void>;

export class Cleanup {
  readonly #stack: Array<{ what: string; run: () => Promise<void> }> = [];
  /** What `unwind` is closing right now (for a shutdown that overruns its grace period). */
  closing: string | null = null;

  /**
   * Registers `fn` as what closes `what`; returns it wrapped to run at most once (later calls
   * wait for the first), and to leave the stack when called directly.
   */
  add<A extends unknown[]>(what: string, fn: (...args: A) => unknown): Dispose<A> {
    let done: Promise<void> | null = null;
    const once = (...args: A): Promise<void> => {
      done ??= (async () => {
        const i = this.#stack.indexOf(entry);
        if (i >= 0) this.#stack.splice(i, 1);
        await fn(...args);
      })();
      return done;
    };
    const entry = { what, run: () => once(...([] as unknown as A)) };
    this.#stack.push(entry);
    return once;
  }

  /** Runs every disposer still registered, newest first; a failing one is logged and skipped. */
  async unwind(logger: Logger): Promise<void> {
    let entry;
    while ((entry = this.#stack.at(-1))) {
      const { what } = entry;
      this.closing = what;
      await entry
        .run()
        .catch((err: unknown) =>
          logger.warn({ err: String(err), what }, 'could not close on the way out'),
        );
    }
    this.closing = null;
  }
}
