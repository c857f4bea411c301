// Baseline (a): the per-step math written the straightforward way over arrays of objects —
// map/filter/reduce per rollout, a Map of groups, one formula per pass, fresh arrays for
// intermediates. Idiomatic TypeScript, not deliberately slow; same formulas and the same seeded
// b_g draws as @anneal/rl so the results can be cross-checked.
import { createRng, deriveSeed, type RewardConfig } from '@anneal/rl';
import type { RolloutRecord } from './data.ts';
import type { StepTokenStats } from '@anneal/rl';

const sum = (values: number[]): number => values.reduce((a, b) => a + b, 0);
const mean = (values: number[]): number => sum(values) / values.length;

function groupRewards(group: RolloutRecord[], config: RewardConfig, seed: number): number[] {
  const winners = group.filter((r) => r.baseReward === 1);
  const effective = (r: RolloutRecord) => r.toolCalls - r.toolErrors;
  const rng = createRng(deriveSeed(seed, group[0]!.group));
  const baseline =
    winners.length === 0
      ? null
      : rng.int(Math.min(...winners.map(effective)), Math.ceil(mean(winners.map(effective))));
  const shaping = group.filter((r) => r.baseReward === 1 && r.preferenceScore >= 0.5);
  const others = group.filter((r) => !shaping.includes(r));
  const bWin = mean(shaping.map((r) => r.refLength));
  const bLose = mean(others.map((r) => r.refLength));
  const cap = Math.max(...group.map((r) => r.refLength));
  return group.map((r) => {
    const p = baseline === null ? 0 : 1 - Math.exp(-Math.max(0, effective(r) - baseline));
    const toolPenalty =
      r.baseReward === 1 ? config.alphaWin * p : config.alphaLose * p + config.betaLose;
    let lengthPenalty: number;
    if (r.length > cap) lengthPenalty = 1;
    else if (shaping.includes(r)) lengthPenalty = 1 - Math.exp(-Math.max(0, r.length / bWin - 1));
    else lengthPenalty = 1 - Math.exp(-Math.max(0, bLose / r.length - 1));
    const efficiency = config.lambdaTool * toolPenalty + config.lambdaLen * lengthPenalty;
    return (
      (config.gate ? r.baseReward * r.preferenceScore : r.baseReward + r.preferenceScore) -
      efficiency
    );
  });
}

export interface BaselineResult {
  advantages: number[];
  /** Per rollout, the per-token advantages for a summing trainer. */
  tokenAdvantages: number[][];
  metrics: StepTokenStats;
}

export function baselineStep(
  rollouts: RolloutRecord[],
  config: RewardConfig,
  seed: number,
): BaselineResult {
  const groups = new Map<string, RolloutRecord[]>();
  for (const r of rollouts) {
    const group = groups.get(r.group) ?? [];
    group.push(r);
    groups.set(r.group, group);
  }
  const advantages: number[] = [];
  for (const group of groups.values()) {
    const rewards = groupRewards(group, config, seed);
    const groupMean = mean(rewards);
    advantages.push(
      ...rewards.map((reward) => (rewards.every((x) => x === rewards[0]) ? 0 : reward - groupMean)),
    );
  }
  const ratios = rollouts.map((r) => r.logpTrain.map((lp, t) => Math.exp(lp - r.logpInfer[t]!)));
  const mismatches = rollouts.map((r) => r.logpInfer.map((li, t) => li - r.logpTrain[t]!));
  const tokens = sum(rollouts.map((r) => r.logpTrain.length));
  const n = rollouts.length;
  const tokenAdvantages = rollouts.map((r, i) =>
    r.logpTrain.map(() => advantages[i]! / (n * r.logpTrain.length)),
  );
  return {
    advantages,
    tokenAdvantages,
    metrics: {
      tokens,
      k1: sum(mismatches.map(sum)) / tokens,
      k3: sum(mismatches.map((ds) => sum(ds.map((d) => Math.exp(-d) - 1 + d)))) / tokens,
      ratioMean: sum(ratios.map(sum)) / tokens,
      ratioMin: Math.min(...ratios.map((rs) => Math.min(...rs))),
      ratioMax: Math.max(...ratios.map((rs) => Math.max(...rs))),
      ratioFractionOutside:
        sum(ratios.map((rs) => rs.filter((r) => r < 0.5 || r > 2).length)) / tokens,
      objective: sum(rollouts.map((_, i) => advantages[i]! * mean(ratios[i]!))) / n,
    },
  };
}
