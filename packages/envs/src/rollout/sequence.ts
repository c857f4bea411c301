// The growing token sequence of one rollout, with mask and logprobs kept aligned.
import type { SampledSequence } from '@anneal/engines';
import type { SampledTurn } from './types.ts';

export class RolloutSequence {
  readonly tokens: number[];
  readonly lossMask: number[];
  readonly logprobs: number[];
  readonly promptLength: number;
  /** The non-empty sampled segments as read (Rollout.sampledTurns). */
  readonly turns: SampledTurn[] = [];

  constructor(prompt: readonly number[]) {
    this.tokens = [...prompt];
    this.lossMask = new Array<number>(prompt.length).fill(0);
    this.logprobs = new Array<number>(prompt.length).fill(0);
    this.promptLength = prompt.length;
  }

  get length(): number {
    return this.tokens.length;
  }

  appendGenerated(sample: SampledSequence): void {
    if (sample.logprobs.length !== sample.tokens.length) {
      throw new Error(
        `engine returned ${sample.tokens.length} tokens but ${sample.logprobs.length} logprobs`,
      );
    }
    this.tokens.push(...sample.tokens);
    this.lossMask.push(...new Array<number>(sample.tokens.length).fill(1));
    this.logprobs.push(...sample.logprobs);
  }

  /** Tokens from the environment (tool output): in the sequence, out of the loss. */
  appendEnvironment(tokens: readonly number[]): void {
    this.tokens.push(...tokens);
    this.lossMask.push(...new Array<number>(tokens.length).fill(0));
    this.logprobs.push(...new Array<number>(tokens.length).fill(0));
  }

  generatedCount(): number {
    return this.lossMask.reduce((sum, m) => sum + m, 0);
  }
}
