// Continuous batching with a batch-dependent step time, for the fake vLLM (fake-server.ts
// `batching`). What it computes:
// - vLLM's engine loop (vllm/v1/core/sched/scheduler.py@00024d31 `Scheduler.schedule`): every
//   engine step schedules one token for each running request and a request that arrives joins
//   the running batch at the next step (max_num_seqs is not modelled here), so a completion
//   of n choices is n sequences that each need 1 (prefill) + tokens steps, and ends with its
//   longest choice;
// - the time of one step, `stepBaseMs + stepPerSequenceMs × running sequences`: the memory-bound
//   decode regime, where each step reads the model's weights once whatever the batch (the fixed
//   part: for Qwen3-8B in bf16, 16 GB at an H100's 3.35 TB/s ≈ 5 ms) and each running sequence
//   adds its KV-cache reads and its matmul FLOPs (the part that grows with the batch). Batching
//   therefore raises throughput sub-linearly and it plateaus at 1 / stepPerSequenceMs
//   sequences-tokens per ms — vLLM's large-batch decode stays memory-bound and its throughput
//   flattens as the batch grows (Recasens et al. 2025, "Mind the Memory Gap", arXiv:2503.08311).
//   The two figures are parameters: the benchmarks state theirs.
// Time advances by events, not by a timer per step: at each arrival or completion the steps
// done since the last event are counted at the step time of the batch that ran them, and one
// timer is set for the next completion. A late timer (a loaded machine) only delays the reply;
// the steps it stood for are counted, not lost.
export interface BatchDecodeOptions {
  /** ms of one engine step whatever the batch (the weights read once per step). */
  stepBaseMs: number;
  /** ms each running sequence adds to a step (its KV-cache reads and FLOPs). */
  stepPerSequenceMs: number;
}

interface Sequence {
  /** Steps still to run (1 prefill + its tokens). */
  left: number;
  done: () => void;
}

export class ContinuousBatch {
  private readonly running = new Set<Sequence>();
  /** performance.now() of the last accounting; steps before it are counted. */
  private lastMs = 0;
  /** Fraction of a step run since `lastMs` (carried so short intervals are not lost). */
  private partial = 0;
  private timer: NodeJS.Timeout | undefined;
  /** Engine steps run, and sequence-tokens decoded (one per running sequence a step). */
  steps = 0;
  decoded = 0;
  /** ms the batch stood still for adapter reads. */
  stalledMs = 0;
  /** Most sequences ever running together. */
  peakBatch = 0;

  constructor(readonly options: BatchDecodeOptions) {
    if (!(options.stepBaseMs > 0) || !(options.stepPerSequenceMs >= 0)) {
      throw new RangeError('batching: stepBaseMs > 0 and stepPerSequenceMs >= 0');
    }
  }

  /** ms of one step with `batch` sequences running. */
  stepMs(batch: number): number {
    return this.options.stepBaseMs + this.options.stepPerSequenceMs * batch;
  }

  /** No step runs for `ms` from now (or from the end of a stall already under way): the
   * engine reads an adapter from disk inside its step loop (lora-routes.ts `adapterReadMs`). */
  stall(ms: number): void {
    this.advance();
    this.lastMs = Math.max(this.lastMs, performance.now()) + ms;
    this.stalledMs += ms;
    this.schedule();
  }

  /** Sequences running now. */
  get batch(): number {
    return this.running.size;
  }

  /** Decodes one completion: resolves once every choice (`tokens[k]` tokens each) is done. */
  async decode(tokens: readonly number[]): Promise<void> {
    this.advance();
    const done = tokens.map(
      (count) =>
        new Promise<void>((resolve) => this.running.add({ left: 1 + count, done: resolve })),
    );
    this.peakBatch = Math.max(this.peakBatch, this.running.size);
    this.schedule();
    await Promise.all(done);
  }

  /** Counts the steps run since the last event, each at the step time of the batch that ran
   * it (a completion inside the interval shrinks the batch for the steps after it). */
  private advance(): void {
    const now = performance.now();
    if (now <= this.lastMs) return; // inside a stall
    for (;;) {
      if (this.running.size === 0) {
        this.lastMs = now;
        this.partial = 0;
        return;
      }
      const step = this.stepMs(this.running.size);
      const span = this.partial + (now - this.lastMs) / step;
      const shortest = Math.min(...[...this.running].map((s) => s.left));
      if (span < shortest) {
        const whole = Math.floor(span);
        this.run(whole);
        this.partial = span - whole;
        this.lastMs = now;
        return;
      }
      this.lastMs += (shortest - this.partial) * step;
      this.partial = 0;
      this.run(shortest);
    }
  }

  /** `count` steps of the running batch; sequences that reach their end complete. */
  private run(count: number): void {
    if (count === 0) return;
    this.steps += count;
    this.decoded += count * this.running.size;
    for (const sequence of this.running) {
      sequence.left -= count;
      if (sequence.left <= 0) {
        this.running.delete(sequence);
        sequence.done();
      }
    }
  }

  /** One timer, for the next completion at the current batch's step time. */
  private schedule(): void {
    clearTimeout(this.timer);
    if (this.running.size === 0) return;
    const shortest = Math.min(...[...this.running].map((s) => s.left));
    const wait = (shortest - this.partial) * this.stepMs(this.running.size);
    const startedAt = this.lastMs;
    this.timer = setTimeout(
      () => {
        this.advance();
        this.schedule();
      },
      Math.max(0, startedAt + wait - performance.now()),
    );
  }
}
