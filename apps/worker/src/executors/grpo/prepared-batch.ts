// What step phases 1–4 hand the trainer (batch.ts prepares it): a module of its own, so that the
// ledger's records (ledger-records.ts), which read a batch, do not import the GRPO set-up.
import type { Rollout } from '@anneal/envs';
import type { GroupScore } from '@anneal/rl';
import type { ScoringUsage } from '../scoring-meter.ts';
import type { ReferenceGroup } from './reference-cache.ts';
import type { StepPrompt } from './sample-prompts.ts';

export interface PreparedBatch {
  step: number;
  prompts: StepPrompt[];
  groups: Rollout[][];
  references: ReferenceGroup[];
  baseReward: number[][];
  /** The judge's verdicts per rollout on its prompt's judged rubrics; null where it was not
   * asked (rewards.ts gradeRollout). */
  judged: (boolean[] | null)[][];
  preferenceScore: number[][];
  scores: GroupScore[];
  /** What rewarding the batch sent the judge and the reward model (its step's usage). */
  scoring: ScoringUsage;
  /** Policy version that sampled every rollout of the batch (all turns). */
  version: number;
  /** The batch's own rollout and reward wall times (they may overlap an earlier step). */
  rolloutSeconds: number;
  rewardSeconds: number;
}
