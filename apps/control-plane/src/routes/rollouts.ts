// Rollout ledger routes: GET /v1/runs/{id}/rollouts (a GRPO run's rollouts filtered, sorted and
// paged) and GET /v1/runs/{id}/rollouts/{rolloutId} (one, with its token ids and logprobs when
// the run recorded them). Viewer role, tenant-scoped like GET /v1/runs/{id}; a run of another
// kind, or a rollout the ledger does not hold, is a 404.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  ROLLOUT_FINISHES,
  ROLLOUT_ID_PATTERN,
  ROLLOUT_ROLES,
  RolloutPage,
  RolloutRecord,
  RUN_ID_PATTERN,
} from '@anneal/protocol';
import type { AppContext } from '../context.ts';
import { principalOf } from '../plugins/auth.ts';
import { ROLLOUT_SORTS, rolloutById, rolloutPage } from '../services/results/rollouts.ts';
import { RunIdParams, StringEnum, pageQueryFields, problemResponses } from './schemas.ts';

const RolloutQuery = Type.Object(
  {
    step: Type.Optional(Type.Integer({ minimum: 1 })),
    role: Type.Optional(StringEnum(ROLLOUT_ROLES, 'policy or reference (default: both).')),
    prompt: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 512,
        description: 'A promptId: that prompt in every step (the same id in other runs).',
      }),
    ),
    finish: Type.Optional(StringEnum(ROLLOUT_FINISHES)),
    minReward: Type.Optional(Type.Number({ description: 'R at least this (policy rollouts).' })),
    maxReward: Type.Optional(Type.Number({ description: 'R at most this (policy rollouts).' })),
    hasToolCalls: Type.Optional(Type.Boolean()),
    hasToolErrors: Type.Optional(Type.Boolean()),
    grep: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 256,
        description:
          'Case-insensitive text in the prompt, a turn, a tool call or its result, or the answer.',
      }),
    ),
    sort: Type.Optional(
      StringEnum(
        ROLLOUT_SORTS,
        'reward (R), advantage, ratio (mean IS ratio), length (generated tokens), toolCalls; default: by step, group, policy before reference, index.',
      ),
    ),
    order: pageQueryFields.order,
    limit: pageQueryFields.limit,
    cursor: pageQueryFields.cursor,
  },
  { additionalProperties: false },
);

const RolloutParams = Type.Object({
  id: Type.String({ pattern: RUN_ID_PATTERN }),
  rolloutId: Type.String({
    pattern: ROLLOUT_ID_PATTERN,
    description: '`<step>-<group>-<index>`, a reference `<step>-<group>-r<index>`.',
  }),
});

export const rolloutRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (
  app,
  { ctx },
) => {
  app.get(
    '/v1/runs/:id/rollouts',
    {
      config: { role: 'viewer' },
      schema: {
        summary:
          "A GRPO run's rollouts (policy and reference): turns, tool calls, reward parts, advantage, IS ratios; filtered, sorted, paged",
        params: RunIdParams,
        querystring: RolloutQuery,
        response: { 200: RolloutPage, ...problemResponses },
      },
    },
    async (request) => {
      const { tenant } = principalOf(request);
      const { order, ...query } = request.query;
      return rolloutPage(ctx, tenant, request.params.id, { ...query, order: order ?? 'asc' });
    },
  );

  app.get(
    '/v1/runs/:id/rollouts/:rolloutId',
    {
      config: { role: 'viewer' },
      schema: {
        summary: 'One rollout, with token ids and logprobs when the run recorded them',
        params: RolloutParams,
        response: { 200: RolloutRecord, ...problemResponses },
      },
    },
    async (request) => {
      const { tenant } = principalOf(request);
      return rolloutById(ctx, tenant, request.params.id, request.params.rolloutId);
    },
  );
};
