// What a run will cost before it starts (`anneal submit --dry-run`, POST /v1/runs/estimate):
// per step, a ceiling from the bounds the spec sets (tokens per rollout, tool calls per rollout,
// examples per step), priced with the operator's table. Prompt length and step time are not in
// a spec: they count only when the caller states them (docs/usage.md "Estimates").
import { MIN_PROBE_ROLLOUTS, type RunSpec } from './run-spec/index.ts';
import { NO_USAGE, type Usage, type UsageCost, type UsagePrices, priceUsage } from './usage.ts';

export interface EstimateAssumptions {
  /** Mean prompt tokens of one sampling request; absent: prompt tokens are not estimated. */
  promptTokens?: number;
  /** Seconds one step holds a worker slot; absent: slot time is not estimated. */
  stepSeconds?: number;
}

export interface StepEstimate {
  /** 1-based position in `perStep`. */
  step: number;
  usage: Usage;
  costUsd: UsageCost;
}

export interface RunEstimate {
  kind: RunSpec['kind'];
  steps: number;
  /** The distinct steps: one for a training run (all alike), one per tool-call budget for an
   * eval (each checkpoint runs the same list). */
  perStep: StepEstimate[];
  total: { usage: Usage; costUsd: UsageCost };
  /** Which quantities are not in the estimate, and why. */
  notEstimated: string[];
  /** The run spec's `budget.maxUsd`, and whether the ceiling stays under it. */
  budget: { maxUsd: number; fits: boolean } | null;
}

/** Sampling usage of `groups` first-turn requests of `perGroup` rollouts each (n = perGroup),
 * each rollout at most `maxTokens` tokens and `calls` tool calls: a first turn sends the prompt
 * once for its whole group (as vLLM counts a request's prompt_tokens once for all n), each tool
 * call is a further request that re-sends it (no prefix caching). */
function sampled(
  groups: number,
  perGroup: number,
  maxTokens: number,
  calls: number,
  prompt: number,
): Usage {
  const rollouts = groups * perGroup;
  return {
    promptTokens: prompt * (groups + rollouts * calls),
    completionTokens: rollouts * maxTokens,
    trainedTokens: 0,
    toolCalls: rollouts * calls,
    judgeCalls: 0,
    scoredTokens: 0,
    slotSeconds: 0,
  };
}

type GrpoSpec = Extract<RunSpec, { kind: 'grpo' }>;

/** A GRPO step's ceiling term by term, so that each can change on its own: the policy groups
 * (trained), as many reference groups (uncached: the ceiling; a cached group is billed once),
 * and, with `maxPolicyLag` ≥ 1, the mismatch probe of a lagged batch: rollout.probeFraction of
 * the batch in whole rollouts (at least MIN_PROBE_ROLLOUTS, at most the batch; + 1 for the
 * rounding of its token budget), one request each (n = 1); every step but a run's first may be
 * lagged (counted at every step whatever rollout.probeEvery: a ceiling). Pipelined sampling
 * adds no more metered usage: a batch sampled ahead is metered once, by the step that trains
 * it; the pipeline launches none past the run's last step, and a stop aborts the ones not
 * taken (a resume samples them again, metered then). The `scoring` term: at most one judge
 * request per policy rollout (QA prompts and rollouts without an answer ask none), and the
 * reward model scoring every policy and reference rollout (a cached reference group is scored
 * once), each its prompt and at most `maxTokens` generated tokens — plus the tool results
 * inside the response, which the spec does not bound (estimateRun says so). The spec does not
 * say whether the run has a judge or a reward model (operator defaults may give them): the
 * ceiling counts both. */
export function grpoStepTerms(spec: GrpoSpec, prompt: number): Record<string, Usage> {
  const { promptsPerStep, groupSize, maxTokens, maxPolicyLag, probeFraction } = spec.rollout;
  const calls = spec.tools.maxCallsPerRollout;
  const batch = promptsPerStep * groupSize;
  const policy = sampled(promptsPerStep, groupSize, maxTokens, calls, prompt);
  const terms: Record<string, Usage> = {
    policy: { ...policy, trainedTokens: batch * maxTokens },
    reference: sampled(promptsPerStep, groupSize, maxTokens, calls, prompt),
    scoring: { ...NO_USAGE, judgeCalls: batch, scoredTokens: 2 * batch * (prompt + maxTokens) },
  };
  if (maxPolicyLag > 0) {
    const probed = Math.min(
      batch,
      Math.max(MIN_PROBE_ROLLOUTS, Math.ceil(probeFraction * batch) + 1),
    );
    terms.mismatchProbe = sampled(probed, 1, maxTokens, calls, prompt);
  }
  return terms;
}

const combine = (a: Usage, b: Usage, times = 1): Usage => ({
  promptTokens: a.promptTokens + times * b.promptTokens,
  completionTokens: a.completionTokens + times * b.completionTokens,
  trainedTokens: a.trainedTokens + times * b.trainedTokens,
  toolCalls: a.toolCalls + times * b.toolCalls,
  judgeCalls: a.judgeCalls + times * b.judgeCalls,
  scoredTokens: a.scoredTokens + times * b.scoredTokens,
  slotSeconds: a.slotSeconds + times * b.slotSeconds,
});

/** The distinct steps of a run and how often the list repeats: every training step is alike;
 * an eval runs one step per tool-call budget for each checkpoint. */
function stepUsages(spec: RunSpec, prompt: number): { steps: Usage[]; repeat: number } {
  switch (spec.kind) {
    case 'grpo': {
      const terms = Object.values(grpoStepTerms(spec, prompt));
      const step = terms.reduce((sum, term) => combine(sum, term), { ...NO_USAGE });
      return { steps: [step], repeat: spec.steps };
    }
    case 'sft':
      return {
        steps: [{ ...NO_USAGE, trainedTokens: spec.batchSize * spec.maxSeqLen }],
        repeat: spec.steps,
      };
    case 'rm':
      // Both responses of a pair go through the reward model.
      return {
        steps: [{ ...NO_USAGE, trainedTokens: 2 * spec.batchSize * spec.maxSeqLen }],
        repeat: spec.steps,
      };
    case 'eval': {
      const rollouts = spec.examples * spec.datasets.length;
      // `judge: llm` asks the judge at most once per answer (eval/grade.ts); the reward model
      // scores every rollout of a checkpoint comparison (more than one model), each its prompt
      // and at most maxOutputTokens generated tokens (plus tool results: not bounded).
      const compared = (spec.models?.length ?? 1) > 1;
      const steps = spec.budgets.toolCallBudgets.map((b) => ({
        ...sampled(rollouts, 1, spec.budgets.maxOutputTokens, b, prompt),
        judgeCalls: spec.judge === 'llm' ? rollouts : 0,
        scoredTokens: compared ? rollouts * (prompt + spec.budgets.maxOutputTokens) : 0,
      }));
      return { steps, repeat: spec.models?.length ?? 1 };
    }
  }
}

/** Whether a reward model may score responses holding tool results (not in the ceiling). */
function scoredToolResults(spec: RunSpec): boolean {
  if (spec.kind === 'grpo') return spec.tools.maxCallsPerRollout > 0;
  if (spec.kind === 'eval') {
    return (spec.models?.length ?? 1) > 1 && spec.budgets.toolCallBudgets.some((b) => b > 0);
  }
  return false;
}

/** A ceiling on a validated (defaulted) spec's usage and cost, step by step and in total. */
export function estimateRun(
  spec: RunSpec,
  prices: UsagePrices,
  assumptions: EstimateAssumptions = {},
): RunEstimate {
  const slotSeconds = assumptions.stepSeconds ?? 0;
  const { steps, repeat } = stepUsages(spec, assumptions.promptTokens ?? 0);
  const perStep = steps.map((usage, i) => {
    const timed = { ...usage, slotSeconds };
    return { step: i + 1, usage: timed, costUsd: priceUsage(timed, prices) };
  });
  const once = perStep.reduce((sum, s) => combine(sum, s.usage), { ...NO_USAGE });
  const total = combine({ ...NO_USAGE }, once, repeat);
  const costUsd = priceUsage(total, prices);
  const notEstimated: string[] = [];
  if (assumptions.promptTokens === undefined && spec.kind !== 'sft' && spec.kind !== 'rm')
    notEstimated.push('prompt tokens: the spec does not bound prompt length');
  if (scoredToolResults(spec))
    notEstimated.push(
      'scored tokens: tool results inside a scored response (the spec does not bound their length)',
    );
  if (assumptions.stepSeconds === undefined)
    notEstimated.push('slot time: a step’s duration depends on the hardware');
  const maxUsd = spec.budget?.maxUsd;
  return {
    kind: spec.kind,
    steps: perStep.length * repeat,
    perStep,
    total: { usage: total, costUsd },
    notEstimated,
    budget: maxUsd === undefined ? null : { maxUsd, fits: costUsd.total <= maxUsd },
  };
}
