// The growing token sequence of one rollout, with mask and logprobs kept aligned.
import type { SampledSequence } from '@anneal/engines';
import type { SampledTurn } from './types.ts';

export class RolloutSequence {
  readonly tokens: number[];
  readonly lossMask: number[];
  /** null for a rollout sampled without logprobs (RolloutConfig.logprobs false). */
  readonly logprobs: number[] | null;
  readonly promptLength: number;
  /** The non-empty sampled segments as read (Rollout.sampledTurns). */
  readonly turns: SampledTurn[] = [];

  constructor(prompt: readonly number[], withLogprobs = true) {
    this.tokens = [...prompt];
    this.lossMask = new Array<number>(prompt.length).fill(0);
    this.logprobs = withLogprobs ? new Array<number>(prompt.length).fill(0) : null;
    this.promptLength = prompt.length;
  }

  get length(): number {
    return this.tokens.length;
  }

  appendGenerated(sample: SampledSequence): void {
    if (this.logprobs !== null) {
      if (sample.logprobs?.length !== sample.tokens.length) {
        throw new Error(
          `engine returned ${sample.tokens.length} tokens but ` +
            `${sample.logprobs === null ? 'no' : sample.logprobs.length} logprobs`,
        );
      }
      this.logprobs.push(...sample.logprobs);
    }
    this.tokens.push(...sample.tokens);
    this.lossMask.push(...new Array<number>(sample.tokens.length).fill(1));
  }

  /** Tokens from the environment (tool output): in the sequence, out of the loss. */
  appendEnvironment(tokens: readonly number[]): void {
    this.tokens.push(...tokens);
    this.lossMask.push(...new Array<number>(tokens.length).fill(0));
    this.logprobs?.push(...new Array<number>(tokens.length).fill(0));
  }

  generatedCount(): number {
    return this.lossMask.reduce((sum, m) => sum + m, 0);
  }
}
