// Wall time during which at least one task of a kind was running (e.g. any rollout of any
// batch, docs/recipe.md "Pipelined GRPO"): the union of the tasks' intervals, so overlapping
// batches are not counted twice. A step reads the busy time between two marks.
export class BusyMeter {
  private active = 0;
  private since = 0;
  private accumulatedMs = 0;

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Runs `fn`, counting the meter busy while it is pending. */
  async during<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active++ === 0) this.since = this.now();
    try {
      return await fn();
    } finally {
      if (--this.active === 0) this.accumulatedMs += this.now() - this.since;
    }
  }

  /** Busy milliseconds so far (the running interval included): subtract two marks. */
  mark(): number {
    return this.accumulatedMs + (this.active > 0 ? this.now() - this.since : 0);
  }
}
