// The defaults of `anneal reward score` are the GRPO run spec's (packages/protocol
// run-spec/grpo.ts: `reward.*` and `advantage.normalizeStd`), read from the schema itself, so the
// CLI scores a group exactly as a GRPO run with the same omitted keys would (docs/recipe.md §4, §2).
import { GrpoSpec } from '@anneal/protocol';
import type { RewardConfig } from '@anneal/rl';

function schemaDefault<T extends 'number' | 'boolean'>(
  schema: { default?: unknown },
  path: string,
  type: T,
): T extends 'number' ? number : boolean {
  const value = schema.default;
  if (typeof value !== type) throw new Error(`run spec ${path} has no ${type} default`);
  return value as T extends 'number' ? number : boolean;
}

function runSpecRewardDefaults(): Readonly<RewardConfig> {
  const reward = GrpoSpec.properties.reward.properties;
  const advantage = GrpoSpec.properties.advantage.properties;
  return Object.freeze({
    alphaWin: schemaDefault(reward.alphaWin, 'reward.alphaWin', 'number'),
    alphaLose: schemaDefault(reward.alphaLose, 'reward.alphaLose', 'number'),
    betaLose: schemaDefault(reward.betaLose, 'reward.betaLose', 'number'),
    lambdaTool: schemaDefault(reward.lambdaTool, 'reward.lambdaTool', 'number'),
    lambdaLen: schemaDefault(reward.lambdaLen, 'reward.lambdaLen', 'number'),
    gate: schemaDefault(reward.gate, 'reward.gate', 'boolean'),
    normalizeStd: schemaDefault(advantage.normalizeStd, 'advantage.normalizeStd', 'boolean'),
  });
}

/** Omitted config keys take these: the GRPO run spec's defaults. */
export const REWARD_DEFAULTS: Readonly<RewardConfig> = runSpecRewardDefaults();
