// Step phase 2: G rollouts per prompt through the inference engine, multi-turn with search_web
// (envs rollout loop): exact token ids, sampling logprobs and the loss mask (tool outputs 0).
import { runRollouts, type Rollout, type RolloutEnv } from '@anneal/envs';
import { samplingSeed } from '../common/sampling-seed.ts';
import type { StepPrompt } from './sample-prompts.ts';

/** One group of G policy rollouts per prompt, in prompt order. */
export function policyRollouts(
  env: RolloutEnv,
  prompts: readonly StepPrompt[],
  groupSize: number,
  seed: number,
  step: number,
  signal?: AbortSignal,
): Promise<Rollout[][]> {
  const requests = prompts.map((p, g) => ({
    prompt: p.tokens,
    n: groupSize,
    seed: samplingSeed(seed, `rollout:${step}:${g}`),
  }));
  return runRollouts(env, requests, signal);
}

/** The response part of a rollout (everything after the prompt: calls, results, answer). */
export function responseTokens(rollout: Rollout): Int32Array {
  return rollout.tokens.subarray(rollout.promptLength);
}
