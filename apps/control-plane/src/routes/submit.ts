// POST /v1/runs. Its own plugin so its body parsers keep the raw text: the spec is parsed
// (JSON or YAML) by the protocol, which reports JSON pointers and source lines.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import {
  RunEstimateSchema,
  RunResource,
  RunSpec,
  estimateRun,
  formatIssues,
  schemaIssues,
} from '@anneal/protocol';
import type { AppContext } from '../context.ts';
import { AnnealError } from '../errors.ts';
import { principalOf } from '../plugins/auth.ts';
import { submitRun, validateSubmission } from '../services/runs/submit.ts';
import { SPEC_TYPES, documentText, idempotencyKeyOf } from './request-text.ts';
import { problemResponses } from './schemas.ts';

/** The run spec text of a request body. */
const specText = (body: unknown) =>
  documentText(body, 'ANNEAL_ERR_RUN_SPEC_INVALID', 'expected a run spec');

const EstimateQuery = Type.Object(
  {
    promptTokens: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 1_048_576,
        description:
          'Mean prompt tokens per sampling request; absent: prompt tokens not estimated.',
      }),
    ),
    stepSeconds: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 1e7,
        description: 'Seconds a step holds its worker slot; absent: slot time not estimated.',
      }),
    ),
  },
  { additionalProperties: false },
);

function estimateQuery(query: unknown): Static<typeof EstimateQuery> {
  const value = Value.Convert(EstimateQuery, query);
  if (Value.Check(EstimateQuery, value)) return value;
  const issues = schemaIssues(EstimateQuery, value).map((i) => ({ ...i, path: `/query${i.path}` }));
  throw new AnnealError('ANNEAL_ERR_VALIDATION', formatIssues(issues), issues);
}

export const submitRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (
  app,
  { ctx },
) => {
  // Only the spec types are accepted (Fastify's default text/plain parser would let a plain-text
  // body through to the spec parser): anything else is 415.
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser(SPEC_TYPES, { parseAs: 'string' }, (_request, body, done) => {
    done(null, body);
  });

  app.post(
    '/v1/runs',
    {
      config: { role: 'submitter' },
      // The protocol validates the body (defaults, pointers, lines); the schema documents it.
      validatorCompiler: () => () => true,
      schema: {
        summary: 'Submit a run (JSON or YAML spec)',
        consumes: SPEC_TYPES,
        headers: Type.Object({
          'idempotency-key': Type.Optional(
            Type.String({ description: 'Same key + same body returns the same run.' }),
          ),
        }),
        body: RunSpec,
        response: { 200: RunResource, 201: RunResource, ...problemResponses },
      },
    },
    async (request, reply) => {
      const { tenant } = principalOf(request);
      const key = idempotencyKeyOf(request);
      const result = await submitRun(ctx, {
        tenant,
        body: specText(request.body),
        ...(key !== undefined && { idempotencyKey: key }),
      });
      return reply
        .code(result.created ? 201 : 200)
        .header('location', `/v1/runs/${result.run.id}`)
        .send(result.run);
    },
  );
  app.post(
    '/v1/runs/estimate',
    {
      config: { role: 'submitter' },
      // The body is the spec's text, validated by the protocol; the query is checked below.
      validatorCompiler: () => () => true,
      schema: {
        summary:
          'Validate a run spec like POST /v1/runs and price it (a ceiling per step and in total) without queuing it',
        consumes: SPEC_TYPES,
        querystring: EstimateQuery,
        body: RunSpec,
        response: { 200: RunEstimateSchema, ...problemResponses },
      },
    },
    async (request) => {
      const { tenant } = principalOf(request);
      const { resolved } = await validateSubmission(ctx, tenant, specText(request.body));
      const { promptTokens, stepSeconds } = estimateQuery(request.query);
      const estimate = estimateRun(resolved, ctx.operator.prices, {
        ...(promptTokens !== undefined && { promptTokens }),
        ...(stepSeconds !== undefined && { stepSeconds }),
      });
      return { ...estimate, prices: ctx.operator.prices };
    },
  );
};
