// A step's usage keys (docs/usage.md): the totals the run context meters with the step's
// commit. Prompt tokens are the context tokens sent, request by request: a group's first turn
// is one request with n = G that sends the prompt once (vLLM's usage counts a request's
// prompt_tokens once however many completions it returns), every later turn of a rollout is a
// request of its own that re-sends the whole context so far (@anneal/envs billedPromptTokens).
// Tool calls: only calls that reached the search backend.
import { type Rollout, billedPromptTokens, reachedBackend } from '@anneal/envs';
import { METRIC, type StepRecordMetrics } from './metrics.ts';

const sum = (values: Iterable<number>) => {
  let total = 0;
  for (const v of values) total += v;
  return total;
};

/** Context tokens sent for rollouts whose first turns were one request (n = rollouts.length):
 * the prompt once, then each rollout's later requests. */
export function requestPromptTokens(rollouts: readonly Rollout[]): number {
  if (rollouts.length === 0) return 0;
  const prompt = rollouts[0]!.promptLength;
  // billedPromptTokens counts each rollout's first request (the prompt) as its own
  return prompt + sum(rollouts.map((r) => billedPromptTokens(r.lossMask, r.promptLength) - prompt));
}

/** Prompt and completion tokens and backend tool calls of what a step sampled: `requests`
 * holds the rollouts of each first-turn request (a GRPO group; one rollout for n = 1). */
export function samplingUsage(requests: Iterable<readonly Rollout[]>): StepRecordMetrics {
  const groups = [...requests];
  const all = groups.flat();
  return {
    [METRIC.usagePromptTokens]: sum(groups.map(requestPromptTokens)),
    [METRIC.usageCompletionTokens]: sum(all.map((r) => r.generatedTokens)),
    [METRIC.usageToolCalls]: sum(
      all.map((r) => r.calls.filter((c) => reachedBackend(c.status)).length),
    ),
  };
}

/** Tokens the trainer processed in the step. */
export function trainingUsage(trainedTokens: number): StepRecordMetrics {
  return { [METRIC.usageTrainedTokens]: trainedTokens };
}
