// API shapes the console reads, from the protocol's schemas (types only: nothing of the
// protocol package or TypeBox is bundled).
import type { Static } from '@sinclair/typebox';
import type { RunList as RunListSchema, StepHistory as StepHistorySchema } from '@anneal/protocol';

export type { EvalResults, RunEvent, RunResource } from '@anneal/protocol';
export type RunList = Static<typeof RunListSchema>;
export type StepHistory = Static<typeof StepHistorySchema>;

export type { EvalItem, RolloutRecord, RolloutToolCall } from '@anneal/protocol';
import type { EvalItem, RolloutRecord } from '@anneal/protocol';

/** GET /v1/runs/{id}/rollouts: records without their token arrays. */
export interface RolloutPage {
  runId: string;
  rollouts: Omit<RolloutRecord, 'tokens'>[];
  nextCursor: string | null;
}

export interface EvalItemPage {
  runId: string;
  items: EvalItem[];
  nextCursor: string | null;
}

export type { CheckpointEntry, CheckpointList, CheckpointRetention } from '@anneal/protocol';

export type { RunUsage } from '@anneal/protocol';

export type { RunComparison, SweepResource } from '@anneal/protocol';
