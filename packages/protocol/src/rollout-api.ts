// What GET /v1/runs/{id}/rollouts returns: a page of a GRPO run's rollout ledger records, without
// their token ids and logprobs (GET /v1/runs/{id}/rollouts/{rolloutId} has them).
import { Type, type Static } from '@sinclair/typebox';
import { RolloutRecord } from './rollouts.ts';

export const ListedRollout = Type.Omit(RolloutRecord, ['tokens'], {
  additionalProperties: false,
});
export type ListedRollout = Static<typeof ListedRollout>;

export const RolloutPage = Type.Object(
  {
    runId: Type.String(),
    rollouts: Type.Array(ListedRollout),
    nextCursor: Type.Union([Type.String(), Type.Null()], {
      description:
        'Pass as `cursor` (with the same other parameters) for the next page; a page under a text filter may hold fewer than `limit` rollouts and still have one.',
    }),
  },
  { additionalProperties: false },
);
export type RolloutPage = Static<typeof RolloutPage>;
