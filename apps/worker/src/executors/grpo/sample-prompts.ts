// Step phase 1 (docs/architecture.md "One GRPO step"): the step's prompts, drawn from the data mix
// by weight (docs/recipe.md §3: 90 % verifiable QA, 10 % rubric chat by default) with the step's
// seeded RNG, and encoded once in the run's chat format (the only text ever tokenised).
import type { ChatFormat } from '@anneal/envs';
import type { Rng } from '@anneal/rl';
import { drawMixBatch, type WeightedPool } from '../common/mix-batch.ts';
import type { PromptExample } from '../../resources/data/catalog.ts';

export interface StepPrompt {
  /** Mix source the prompt came from (e.g. `search-qa`). */
  source: string;
  example: PromptExample;
  /** The prompt as the chat format renders it, up to where the answer starts (the marker
   * format's `<|user|>{prompt}<|assistant|>`, a template's generation prompt), as token ids. */
  tokens: number[];
}

export function samplePrompts(
  pools: readonly WeightedPool<PromptExample>[],
  count: number,
  format: ChatFormat,
  rng: Rng,
): StepPrompt[] {
  return drawMixBatch(pools, count, rng).map(({ source, item }) => ({
    source,
    example: item,
    tokens: format.encodePrompt(item.prompt),
  }));
}

/** Reward component of a prompt for the per-component metrics (telemetry REWARD_COMPONENTS). */
export function componentOf(prompt: StepPrompt): 'qa' | 'rubric' {
  return prompt.example.kind;
}
