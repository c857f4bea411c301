// Eval items: GET /v1/runs/{id}/items, an eval run's answers (eval-items.jsonl) filtered, sorted
// and paged. Viewer role, tenant-scoped like GET /v1/runs/{id}; a run of another kind is a 404.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { EvalItemPage, ROLLOUT_FINISHES } from '@anneal/protocol';
import type { AppContext } from '../context.ts';
import { principalOf } from '../plugins/auth.ts';
import { ITEM_SORTS, evalItemPage } from '../services/results/eval-items.ts';
import { RunIdParams, StringEnum, pageQueryFields, problemResponses } from './schemas.ts';

const ItemQuery = Type.Object(
  {
    step: Type.Optional(Type.Integer({ minimum: 1, description: 'One cell (checkpoint × b).' })),
    checkpoint: Type.Optional(Type.Integer({ minimum: 0 })),
    budget: Type.Optional(Type.Integer({ minimum: 0 })),
    prompt: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 512,
        description: 'A question id: that question in every cell.',
      }),
    ),
    correct: Type.Optional(Type.Boolean()),
    abstained: Type.Optional(Type.Boolean()),
    finish: Type.Optional(StringEnum(ROLLOUT_FINISHES)),
    hasToolCalls: Type.Optional(Type.Boolean()),
    grep: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 256,
        description: 'Case-insensitive text in the answer.',
      }),
    ),
    sort: Type.Optional(
      StringEnum(
        ITEM_SORTS,
        'reward (reward-model score), toolCalls, length (completion tokens), promptTokens; default: by cell, then answer order.',
      ),
    ),
    order: pageQueryFields.order,
    limit: pageQueryFields.limit,
    cursor: pageQueryFields.cursor,
  },
  { additionalProperties: false },
);

export const itemRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.get(
    '/v1/runs/:id/items',
    {
      config: { role: 'viewer' },
      schema: {
        summary:
          "An eval run's answers, one per checkpoint × budget × question, filtered and paged",
        params: RunIdParams,
        querystring: ItemQuery,
        response: { 200: EvalItemPage, ...problemResponses },
      },
    },
    async (request) => {
      const { tenant } = principalOf(request);
      const { order, ...query } = request.query;
      return evalItemPage(ctx, tenant, request.params.id, { ...query, order: order ?? 'asc' });
    },
  );
};
