// Step phase 4 (docs/recipe.md §4, §5): per rollout r_base (QA verifier or all rubrics pass) and the
// preference score s = P̄(x, y_i, y_i^ref) against the paired reference rollout (s = 1 without a
// reward model); then per group the anchored tool and length penalties, the gated composite
// reward R = r_base·s − pen_eff and the group-relative advantages (@anneal/rl scoreGroup, b_g
// from an RNG seeded by (run seed, step, group)).
import type { RewardScorer } from '@anneal/engines';
import {
  evaluateRubrics,
  runCheck,
  verifyAnswer,
  type RubricJudge,
  type Rollout,
} from '@anneal/envs';
import type { GrpoSpec } from '@anneal/protocol';
import {
  deriveSeed,
  createRng,
  preferenceProbability,
  scoreGroup,
  type GroupScore,
  type RewardConfig,
} from '@anneal/rl';
import type { ReferenceGroup } from './reference-cache.ts';
import { responseTokens } from './rollouts.ts';
import type { StepPrompt } from './sample-prompts.ts';

/** r_base of one rollout and what the judge said: `judged` holds its verdict on each rubric
 * without a programmatic check, in rubric order; null when it was not asked (a QA prompt, no
 * answer, or a programmatic rubric failed first). */
export interface Grade {
  baseReward: 0 | 1;
  judged: boolean[] | null;
}

/** r_base ∈ {0, 1} of one rollout (a well-formed answer that is right / passes every rubric),
 * with the judge's verdicts. */
export async function gradeRollout(
  prompt: StepPrompt,
  rollout: Rollout,
  judge?: RubricJudge,
): Promise<Grade> {
  if (rollout.answer === null) return { baseReward: 0, judged: null };
  const example = prompt.example;
  if (example.kind === 'qa')
    return { baseReward: verifyAnswer(rollout.answer, example.key) ? 1 : 0, judged: null };
  const answer = rollout.answer;
  // programmatic rubrics first: one that fails decides r_base without a judge call
  if (!example.rubrics.every((r) => !r.check || runCheck(r.check, answer)))
    return { baseReward: 0, judged: null };
  const verdicts = await evaluateRubrics({
    prompt: example.prompt,
    response: answer,
    rubrics: example.rubrics.filter((r) => !r.check),
    ...(judge ? { judge } : {}),
  });
  const judged = verdicts.map((v) => v.pass);
  return { baseReward: judged.every(Boolean) ? 1 : 0, judged };
}

/** r_base ∈ {0, 1} of one rollout. */
export async function baseReward(
  prompt: StepPrompt,
  rollout: Rollout,
  judge?: RubricJudge,
): Promise<0 | 1> {
  return (await gradeRollout(prompt, rollout, judge)).baseReward;
}

/** r_base of every rollout, group by group, and the judge's verdicts (ledger-records.ts). */
export async function baseRewards(
  prompts: readonly StepPrompt[],
  groups: readonly Rollout[][],
  judge?: RubricJudge,
): Promise<{ baseReward: number[][]; judged: (boolean[] | null)[][] }> {
  const grades = await Promise.all(
    groups.map((group, g) => Promise.all(group.map((r) => gradeRollout(prompts[g]!, r, judge)))),
  );
  return {
    baseReward: grades.map((group) => group.map((grade) => grade.baseReward)),
    judged: grades.map((group) => group.map((grade) => grade.judged)),
  };
}

/**
 * s_i = P̄(x, y_i, y_i^ref) for every rollout (docs/recipe.md §5). The scorer is pointwise, so
 * Δ(x, y_ref, y_i) = −Δ(x, y_i, y_ref) and P̄ = σ(s(x, y_i) − s(x, y_ref)). Reference scores
 * are stored on the (cached) reference groups and computed once. Without a scorer s = 1.
 */
export async function preferenceScores(
  scorer: RewardScorer | undefined,
  prompts: readonly StepPrompt[],
  groups: readonly Rollout[][],
  references: readonly ReferenceGroup[],
): Promise<number[][]> {
  if (scorer === undefined) return groups.map((group) => group.map(() => 1));
  const pairsOf = (g: number, rollouts: readonly Rollout[]) =>
    rollouts.map((r) => ({ prompt: prompts[g]!.tokens, response: responseTokens(r) }));
  const unscored = references.filter((ref) => ref.scores === undefined);
  const uniqueUnscored = [...new Set(unscored)];
  const refPairs = uniqueUnscored.flatMap((ref) => {
    const g = references.indexOf(ref);
    return pairsOf(g, ref.rollouts);
  });
  const policyPairs = groups.flatMap((group, g) => pairsOf(g, group));
  const scores = await scorer.score([...policyPairs, ...refPairs]);
  let next = policyPairs.length;
  for (const ref of uniqueUnscored) {
    // A concurrent step (pipelined GRPO) may have scored it meanwhile: the first scores stay.
    ref.scores ??= scores.slice(next, next + ref.rollouts.length);
    next += ref.rollouts.length;
  }
  let k = 0;
  return groups.map((group, g) =>
    group.map((_, i) => {
      const policyScore = scores[k++]!;
      const referenceScore = references[g]!.scores![i]!;
      return preferenceProbability(policyScore - referenceScore, referenceScore - policyScore);
    }),
  );
}

export function rewardConfig(spec: GrpoSpec): RewardConfig {
  const r = spec.reward;
  return {
    alphaWin: r.alphaWin,
    alphaLose: r.alphaLose,
    betaLose: r.betaLose,
    lambdaTool: r.lambdaTool,
    lambdaLen: r.lambdaLen,
    gate: r.gate,
    normalizeStd: spec.advantage.normalizeStd,
  };
}

export interface GroupInputs {
  rollouts: readonly Rollout[];
  references: readonly Rollout[];
  baseReward: readonly number[];
  preferenceScore: readonly number[];
}

/** Penalties, rewards and advantages of each group (docs/recipe.md §4 -> §2). */
export function scoreGroups(
  groups: readonly GroupInputs[],
  config: RewardConfig,
  seed: number,
  step: number,
): GroupScore[] {
  return groups.map((group, g) => {
    if (group.references.length !== group.rollouts.length) {
      throw new RangeError(
        `group ${g}: ${group.references.length} reference rollouts for ${group.rollouts.length} rollouts`,
      );
    }
    const rng = createRng(deriveSeed(seed, `tool-baseline:${step}:${g}`));
    return scoreGroup(
      {
        baseReward: group.baseReward,
        preferenceScore: group.preferenceScore,
        toolCalls: group.rollouts.map((r) => r.toolCalls),
        toolErrors: group.rollouts.map((r) => r.toolErrors),
        length: group.rollouts.map((r) => r.generatedTokens),
        refLength: group.references.map((r) => r.generatedTokens),
      },
      config,
      rng,
    );
  });
}
