// The growing token sequence of one rollout, with mask and logprobs kept aligned.
//
// The three are typed arrays that grow by doubling, and the rollout keeps views of them: their
// bytes live outside V8's collected heap. As JS arrays, a step's rollouts (and each append's
// copies) were live across the rollouts' engine and tool waits, so the young-generation
// collector copied them twice on their way to the old generation — the largest share of the
// orchestrator's garbage-collection time; see docs/performance.md "Orchestrator overhead:
// typed-array rollouts".
import type { SampledSequence } from '@anneal/engines';
import type { SampledTurn } from './types.ts';

const MIN_CAPACITY = 64;

export class RolloutSequence {
  private tokenStore: Int32Array;
  private maskStore: Uint8Array;
  /** null for a rollout sampled without logprobs (RolloutConfig.logprobs false). */
  private logprobStore: Float32Array | null;
  private size = 0;
  private generated = 0;
  readonly promptLength: number;
  /** The non-empty sampled segments as read (Rollout.sampledTurns). */
  readonly turns: SampledTurn[] = [];

  constructor(prompt: ArrayLike<number>, withLogprobs = true) {
    const capacity = Math.max(MIN_CAPACITY, prompt.length * 2);
    this.tokenStore = new Int32Array(capacity);
    this.maskStore = new Uint8Array(capacity);
    this.logprobStore = withLogprobs ? new Float32Array(capacity) : null;
    this.tokenStore.set(prompt);
    this.size = prompt.length;
    this.promptLength = prompt.length;
  }

  /** The ids so far, a view: later appends never change what it shows. */
  get tokens(): Int32Array {
    return this.tokenStore.subarray(0, this.size);
  }

  get lossMask(): Uint8Array {
    return this.maskStore.subarray(0, this.size);
  }

  get logprobs(): Float32Array | null {
    return this.logprobStore?.subarray(0, this.size) ?? null;
  }

  get length(): number {
    return this.size;
  }

  appendGenerated(sample: SampledSequence): void {
    const count = sample.tokens.length;
    if (this.logprobStore !== null && sample.logprobs?.length !== count) {
      throw new Error(
        `engine returned ${count} tokens but ` +
          `${sample.logprobs === null ? 'no' : sample.logprobs.length} logprobs`,
      );
    }
    const at = this.grow(count);
    this.tokenStore.set(sample.tokens, at);
    this.maskStore.fill(1, at, at + count);
    if (this.logprobStore !== null) this.logprobStore.set(sample.logprobs!, at);
    this.generated += count;
  }

  /** Tokens from the environment (tool output): in the sequence, out of the loss. */
  appendEnvironment(tokens: readonly number[]): void {
    const at = this.grow(tokens.length);
    this.tokenStore.set(tokens, at);
    // mask and logprobs past `size` are zero: the stores only grow, zero-filled
  }

  generatedCount(): number {
    return this.generated;
  }

  /** Gives back the stores' unused capacity when it is more than a quarter of them (a finished
   * rollout keeps its views: a step's rollouts, and the reference cache's, would otherwise hold
   * up to twice their bytes). */
  compact(): void {
    if (this.size * 4 >= this.tokenStore.length * 3) return;
    this.tokenStore = this.tokenStore.slice(0, this.size);
    this.maskStore = this.maskStore.slice(0, this.size);
    this.logprobStore = this.logprobStore?.slice(0, this.size) ?? null;
  }

  /** Makes room for `count` more positions; returns where they start. */
  private grow(count: number): number {
    const at = this.size;
    const needed = at + count;
    if (needed > this.tokenStore.length) {
      const capacity = Math.max(needed, this.tokenStore.length * 2);
      this.tokenStore = copied(new Int32Array(capacity), this.tokenStore, at);
      this.maskStore = copied(new Uint8Array(capacity), this.maskStore, at);
      if (this.logprobStore !== null) {
        this.logprobStore = copied(new Float32Array(capacity), this.logprobStore, at);
      }
    }
    this.size = needed;
    return at;
  }
}

function copied<T extends Int32Array | Uint8Array | Float32Array>(
  into: T,
  from: T,
  length: number,
): T {
  into.set(from.subarray(0, length));
  return into;
}
