// Eval results routes: GET /v1/runs/{id}/results (JSON) and GET /v1/runs/{id}/results/curve.svg
// (the accuracy-vs-budget and cost-vs-accuracy chart). Viewer role, tenant-scoped like
// GET /v1/runs/{id}; a run of another kind is a 404 problem.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { EvalResults } from '@anneal/protocol';
import type { AppContext } from '../context.ts';
import { principalOf } from '../plugins/auth.ts';
import { evalChartSvg } from '../services/results/eval-chart.ts';
import { evalResults } from '../services/results/eval-results.ts';
import { RunIdParams, problemResponses } from './schemas.ts';

export const resultRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (
  app,
  { ctx },
) => {
  app.get(
    '/v1/runs/:id/results',
    {
      config: { role: 'viewer' },
      schema: {
        summary:
          'Eval results: accuracy (95% interval), tool calls, cost per query per checkpoint and budget; knees; cost–accuracy frontier',
        params: RunIdParams,
        response: { 200: EvalResults, ...problemResponses },
      },
    },
    async (request) => {
      const { tenant } = principalOf(request);
      return evalResults(ctx, tenant, request.params.id);
    },
  );

  app.get(
    '/v1/runs/:id/results/curve.svg',
    {
      config: { role: 'viewer' },
      schema: {
        summary:
          'Eval results chart (SVG): accuracy vs tool budget with 95% bands, accuracy vs cost',
        params: RunIdParams,
        response: {
          200: {
            description: 'SVG image',
            content: { 'image/svg+xml': { schema: Type.String() } },
          },
          ...problemResponses,
        },
      },
    },
    async (request, reply) => {
      const { tenant } = principalOf(request);
      const results = await evalResults(ctx, tenant, request.params.id);
      return reply.type('image/svg+xml; charset=utf-8').send(evalChartSvg(results));
    },
  );
};
