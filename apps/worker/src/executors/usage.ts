// A step's usage keys (docs/usage.md): the totals the run context meters with the step's
// commit. Sampling is billed like evaluation bills a query (@anneal/envs billedPromptTokens:
// every request re-sends its context; only calls that reached the search backend).
import { type Rollout, billedPromptTokens, reachedBackend } from '@anneal/envs';
import { METRIC, type StepRecordMetrics } from './metrics.ts';

const sum = (values: Iterable<number>) => {
  let total = 0;
  for (const v of values) total += v;
  return total;
};

/** Prompt and completion tokens and backend tool calls of the rollouts a step sampled. */
export function samplingUsage(rollouts: Iterable<Rollout>): StepRecordMetrics {
  const all = [...rollouts];
  return {
    [METRIC.usagePromptTokens]: sum(all.map((r) => billedPromptTokens(r.lossMask, r.promptLength))),
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
