// The growing token sequence of one rollout, with mask and logprobs kept aligned.
//
// Each append builds the three arrays anew at their exact length (concat, one filled loop)
// rather than growing them by push: a rollout is mostly one long sampled segment, and growing
// 4,096-token arrays element by element (plus the spread arguments and filled temporaries of
// `push(...)`) was the largest allocation of a production step; see
// docs/performance.md "Orchestrator overhead: model-like text, references without logprobs".
// A rollout has few segments, so copying per segment is cheap.
import type { SampledSequence } from '@anneal/engines';
import type { SampledTurn } from './types.ts';

export class RolloutSequence {
  private tokensSoFar: number[];
  private maskSoFar: number[];
  /** null for a rollout sampled without logprobs (RolloutConfig.logprobs false). */
  private logprobsSoFar: number[] | null;
  readonly promptLength: number;
  /** The non-empty sampled segments as read (Rollout.sampledTurns). */
  readonly turns: SampledTurn[] = [];

  constructor(prompt: readonly number[], withLogprobs = true) {
    this.tokensSoFar = prompt.slice();
    this.maskSoFar = filled(prompt.length, 0);
    this.logprobsSoFar = withLogprobs ? filled(prompt.length, 0) : null;
    this.promptLength = prompt.length;
  }

  get tokens(): number[] {
    return this.tokensSoFar;
  }

  get lossMask(): number[] {
    return this.maskSoFar;
  }

  get logprobs(): number[] | null {
    return this.logprobsSoFar;
  }

  get length(): number {
    return this.tokensSoFar.length;
  }

  appendGenerated(sample: SampledSequence): void {
    if (this.logprobsSoFar !== null) {
      if (sample.logprobs?.length !== sample.tokens.length) {
        throw new Error(
          `engine returned ${sample.tokens.length} tokens but ` +
            `${sample.logprobs === null ? 'no' : sample.logprobs.length} logprobs`,
        );
      }
      this.logprobsSoFar = this.logprobsSoFar.concat(sample.logprobs);
    }
    this.tokensSoFar = this.tokensSoFar.concat(sample.tokens);
    this.maskSoFar = extended(this.maskSoFar, sample.tokens.length, 1);
  }

  /** Tokens from the environment (tool output): in the sequence, out of the loss. */
  appendEnvironment(tokens: readonly number[]): void {
    this.tokensSoFar = this.tokensSoFar.concat(tokens);
    this.maskSoFar = extended(this.maskSoFar, tokens.length, 0);
    if (this.logprobsSoFar !== null) {
      this.logprobsSoFar = extended(this.logprobsSoFar, tokens.length, 0);
    }
  }

  generatedCount(): number {
    let count = 0;
    for (const m of this.maskSoFar) count += m;
    return count;
  }
}

/** `length` copies of `value`. */
function filled(length: number, value: number): number[] {
  return new Array<number>(length).fill(value);
}

/** `values` followed by `count` copies of `value`, in a new array of exactly that length. */
function extended(values: readonly number[], count: number, value: number): number[] {
  const out = new Array<number>(values.length + count);
  for (let i = 0; i < values.length; i += 1) out[i] = values[i]!;
  return out.fill(value, values.length);
}
