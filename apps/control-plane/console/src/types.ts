// API shapes the console reads, from the protocol's schemas (types only: nothing of the
// protocol package or TypeBox is bundled).
import type { Static } from '@sinclair/typebox';
import type { RunList as RunListSchema, StepHistory as StepHistorySchema } from '@anneal/protocol';

export type { EvalResults, RunEvent, RunResource } from '@anneal/protocol';
export type RunList = Static<typeof RunListSchema>;
export type StepHistory = Static<typeof StepHistorySchema>;
