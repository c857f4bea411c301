// The batches of a pipelined GRPO run (docs/recipe.md "Pipelined GRPO", docs/architecture.md
// "One GRPO step"): step s takes its prepared batch (prompts, rollouts, rewards) after making
// sure the batches of steps s..min(s+k, total) have been launched, so with lag k the rollouts of
// the next k steps are sampled while step s trains. Each launched batch pins the policy version
// current at its launch (prepareBatch); k = 0 launches each batch when its own step takes it,
// which is the sequential step.
//
// Every launched batch is awaited by someone or settled in `drain`: a batch that fails while an
// earlier step trains fails its own step when that step takes it (the error as thrown), never
// as an unhandled rejection. When the run is told to stop (ctx.stopSignal) the batches not yet
// taken are aborted: the loop stops at the next step boundary and never takes them, and a
// resumed run samples them again from its first step (same seeds).

export type LaunchBatch<T> = (step: number, signal: AbortSignal) => Promise<T>;

interface Launched<T> {
  promise: Promise<T>;
  controller: AbortController;
}

export class BatchPipeline<T> {
  private readonly launched = new Map<number, Launched<T>>();
  private readonly settling = new Set<Promise<unknown>>();
  private stopped = false;

  constructor(
    private readonly options: {
      /** k: batches launched ahead of the step that trains (rollout.maxPolicyLag). */
      lag: number;
      totalSteps: number;
      launch: LaunchBatch<T>;
      /** Aborts the batches not yet taken (the run stops at the next step boundary). */
      stopSignal?: AbortSignal;
    },
  ) {
    options.stopSignal?.addEventListener('abort', () => this.abortPending(), { once: true });
    if (options.stopSignal?.aborted) this.abortPending();
  }

  /** Steps whose batches are launched and not yet taken, in order. */
  pending(): number[] {
    return [...this.launched.keys()].sort((a, b) => a - b);
  }

  /** The batch of `step`, after launching those of steps step..step+k not launched yet. */
  take(step: number): Promise<T> {
    const last = Math.min(step + this.options.lag, this.options.totalSteps);
    for (let s = step; s <= last; s++) {
      if (!this.launched.has(s) && (s === step || !this.stopped)) this.launchBatch(s);
    }
    const batch = this.launched.get(step)!;
    this.launched.delete(step);
    return batch.promise;
  }

  /** Aborts the batches not taken and waits until every one launched has settled. */
  async drain(): Promise<void> {
    this.abortPending();
    while (this.settling.size > 0) await Promise.allSettled([...this.settling]);
  }

  private launchBatch(step: number): void {
    const controller = new AbortController();
    let promise: Promise<T>;
    try {
      promise = this.options.launch(step, controller.signal);
    } catch (error) {
      promise = Promise.reject(error as Error);
    }
    const settled = promise.then(
      () => undefined,
      () => undefined, // reported to whoever takes the batch, or dropped by drain
    );
    this.settling.add(settled);
    void settled.then(() => this.settling.delete(settled));
    this.launched.set(step, { promise, controller });
  }

  private abortPending(): void {
    this.stopped = true;
    for (const [step, batch] of this.launched) {
      batch.controller.abort(new Error(`run stopping: batch of step ${step} not needed`));
    }
  }
}
