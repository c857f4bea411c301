// Usage routes (docs/usage.md): GET /v1/runs/{id}/usage (viewer, tenant-scoped like
// GET /v1/runs/{id}) and GET /v1/usage (operator: every tenant's usage in a UTC day or month).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { BUDGET_PERIODS, RESOURCE_NAME_PATTERN, RunUsage, TenantUsageList } from '@anneal/protocol';
import type { AppContext } from '../context.ts';
import { AnnealError } from '../errors.ts';
import { principalOf } from '../plugins/auth.ts';
import { runUsage, tenantUsage } from '../services/runs/usage.ts';
import { RunIdParams, StringEnum, problemResponses } from './schemas.ts';

const PERIOD_PATTERN = { day: /^\d{4}-\d{2}-\d{2}$/, month: /^\d{4}-\d{2}$/ } as const;

const UsageQuery = Type.Object(
  {
    period: Type.Optional(StringEnum(BUDGET_PERIODS, 'UTC calendar day or month (default).')),
    at: Type.Optional(
      Type.String({
        pattern: '^\\d{4}-\\d{2}(-\\d{2})?$',
        description:
          '`YYYY-MM-DD` (period=day) or `YYYY-MM` (period=month); default: the current one.',
      }),
    ),
    tenant: Type.Optional(Type.String({ pattern: RESOURCE_NAME_PATTERN })),
  },
  { additionalProperties: false },
);

export const usageRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.get(
    '/v1/runs/:id/usage',
    {
      config: { role: 'viewer' },
      schema: {
        summary: 'What a run consumed (tokens, tool calls, slot time) and what it cost in USD',
        params: RunIdParams,
        response: { 200: RunUsage, ...problemResponses },
      },
    },
    async (request) => {
      const { tenant } = principalOf(request);
      return runUsage(ctx, tenant, request.params.id);
    },
  );

  app.get(
    '/v1/usage',
    {
      config: { role: 'operator' },
      schema: {
        summary: 'Usage and cost per tenant in a UTC day or month, with each tenant’s cap',
        querystring: UsageQuery,
        response: { 200: TenantUsageList, ...problemResponses },
      },
    },
    async (request) => {
      const { period = 'month', at, tenant } = request.query;
      if (at !== undefined && !PERIOD_PATTERN[period].test(at)) {
        throw new AnnealError(
          'ANNEAL_ERR_VALIDATION',
          `at must be a ${period} (${period === 'day' ? 'YYYY-MM-DD' : 'YYYY-MM'})`,
          [
            {
              path: '/query/at',
              message: `expected ${period === 'day' ? 'YYYY-MM-DD' : 'YYYY-MM'}`,
            },
          ],
        );
      }
      if (tenant !== undefined && !(tenant in ctx.operator.tenants)) {
        throw new AnnealError(
          'ANNEAL_ERR_UNKNOWN_RESOURCE',
          `no tenant '${tenant}' in the operator config`,
          [{ path: '/query/tenant', message: `unknown tenant '${tenant}'` }],
        );
      }
      return tenantUsage(ctx, {
        period,
        ...(at !== undefined && { at }),
        ...(tenant !== undefined && { tenant }),
      });
    },
  );
};
