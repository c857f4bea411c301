// Step phases 1–4 of a GRPO step (docs/architecture.md "One GRPO step"): sample prompts, policy
// and reference rollouts, rewards, advantages — everything before the trainer, as one batch that
// a pipelined run prepares while earlier steps train (docs/recipe.md "Pipelined GRPO"). The
// batch pins the policy version current at its launch for all turns of all its rollouts.
import { stepRng } from '../common/mix-batch.ts';
import { PhaseTimer } from '../common/phase-timer.ts';
import { ScoringMeter } from '../scoring-meter.ts';
import type { ExecutorContext } from '../types.ts';
import { baseRewards, preferenceScores, rewardConfig, scoreGroups } from './rewards.ts';
import { policyRollouts } from './rollouts.ts';
import type { PreparedBatch } from './prepared-batch.ts';
import { samplePrompts, type StepPrompt } from './sample-prompts.ts';
import type { GrpoState } from './setup.ts';

/** The prompts step `step` draws (a function of the generation's seed and the step). */
export function promptsOfStep(state: GrpoState, step: number): StepPrompt[] {
  return samplePrompts(
    state.pools,
    state.spec.rollout.promptsPerStep,
    state.format,
    stepRng(state.epoch.seed, 'prompts', step),
  );
}

export async function prepareBatch(
  ctx: ExecutorContext,
  state: GrpoState,
  step: number,
  signal: AbortSignal,
): Promise<PreparedBatch> {
  // Read once: a rollback replaces the versions and the epoch only once this batch has settled
  // (the pipeline is drained first).
  const { spec, versions } = state;
  const timer = new PhaseTimer();
  const groupSize = spec.rollout.groupSize;
  const prompts = promptsOfStep(state, step);
  const pinned = versions.pin();
  const env = { ...state.policyEnv, config: { ...state.policyEnv.config, model: pinned.name } };
  const policy = (async () => {
    try {
      return await policyRollouts(env, prompts, groupSize, state.epoch.seed, step, signal);
    } finally {
      await versions.unpin(pinned.version);
    }
  })();
  const [groups, references] = await timer.time('rollout', () =>
    state.samplerBusy.during(() =>
      bothSettled(policy, state.references.forPrompts(prompts, groupSize, step, signal)),
    ),
  );
  const { resources } = ctx;
  // What this batch sends the judge and the reward model, metered by the step that trains it.
  const scoring = new ScoringMeter();
  const { baseReward, judged, preferenceScore, scores } = await timer.time('reward', async () => {
    const { baseReward, judged } = await baseRewards(
      prompts,
      groups,
      scoring.judge(resources.judge),
    );
    const preferenceScore = await preferenceScores(
      scoring.scorer(resources.rewardScorer),
      prompts,
      groups,
      references,
    );
    const inputs = groups.map((rollouts, g) => ({
      rollouts,
      references: references[g]!.rollouts,
      baseReward: baseReward[g]!,
      preferenceScore: preferenceScore[g]!,
    }));
    return {
      baseReward,
      judged,
      preferenceScore,
      scores: scoreGroups(inputs, rewardConfig(spec), state.epoch.seed, step),
    };
  });
  return {
    step,
    prompts,
    groups,
    references,
    baseReward,
    judged,
    preferenceScore,
    scores,
    scoring,
    version: pinned.version,
    rolloutSeconds: timer.get('rollout'),
    rewardSeconds: timer.get('reward'),
  };
}

/** Both results; the first failure only once both have settled, so a failed batch holds no
 * pin and runs no rollout by the time it is reported. */
async function bothSettled<A, B>(a: Promise<A>, b: Promise<B>): Promise<[A, B]> {
  const [ra, rb] = await Promise.allSettled([a, b]);
  if (ra.status === 'rejected') throw ra.reason;
  if (rb.status === 'rejected') throw rb.reason;
  return [ra.value, rb.value];
}
