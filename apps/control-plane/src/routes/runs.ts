// Run read and control routes: GET /v1/runs, GET /v1/runs/{id}, POST /v1/runs/{id}/cancel,
// /pause and /resume, GET /v1/runs/{id}/metrics, GET /v1/runs/compare.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { type Static, Type } from '@sinclair/typebox';
import {
  LABEL_KEY_PATTERN,
  RUN_ID_PATTERN,
  RUN_KINDS,
  RUN_STATES,
  RunComparison,
  RunList,
  SWEEP_MAX_RUNS,
  RunResource,
  StepHistory,
} from '@anneal/protocol';
import { getRun, getRunView, listRuns, runViewJson } from '@anneal/store';
import type { AppContext } from '../context.ts';
import { runNotFound } from '../errors.ts';
import { principalOf } from '../plugins/auth.ts';
import { cancelRun } from '../services/runs/cancel.ts';
import { compareRuns } from '../services/runs/compare.ts';
import { stepHistoryJson } from '../services/results/step-history.ts';
import { pauseRun, resumePausedRun } from '../services/runs/pause.ts';
import { waitingReason } from '../services/runs/waiting.ts';
import { RunIdParams, StringEnum, emptyBodyAsObject, problemResponses } from './schemas.ts';

const ListQuery = Type.Object(
  {
    state: Type.Optional(StringEnum(RUN_STATES)),
    kind: Type.Optional(StringEnum(RUN_KINDS)),
    label: Type.Optional(
      Type.Array(Type.String({ pattern: `${LABEL_KEY_PATTERN.slice(0, -1)}=.{0,128}$` }), {
        maxItems: 16,
        description: 'key=value; repeat for several (all must match).',
      }),
    ),
    limit: Type.Integer({ minimum: 1, maximum: 200, default: 50 }),
    cursor: Type.Optional(Type.String({ pattern: RUN_ID_PATTERN })),
  },
  { additionalProperties: false },
);

const MetricsQuery = Type.Object(
  {
    names: Type.Optional(
      Type.String({ maxLength: 4096, description: 'Comma-separated metric names.' }),
    ),
    fromStep: Type.Integer({ minimum: 0, default: 0 }),
    limit: Type.Integer({ minimum: 1, maximum: 10_000, default: 1000 }),
  },
  { additionalProperties: false },
);

const CompareQuery = Type.Object(
  {
    run: Type.Array(Type.String({ pattern: RUN_ID_PATTERN }), {
      minItems: 2,
      maxItems: SWEEP_MAX_RUNS,
      uniqueItems: true,
      description: 'Run ids, repeated (`?run=A&run=B`): 2 or more runs of one kind.',
    }),
  },
  { additionalProperties: false },
);

const CancelBody = Type.Optional(
  Type.Object(
    { reason: Type.Optional(Type.String({ maxLength: 500 })) },
    { additionalProperties: false },
  ),
);

/** Pause and resume take the same optional reason, shown on the run's transitions. */
const ReasonBody = CancelBody;

/** `<who>: <why>`, or who alone: the transition says which user asked. */
const byPrincipal = (name: string, reason: string | undefined, verb: string) =>
  reason ? `${verb} by ${name}: ${reason}` : `${verb} by ${name}`;

export const runRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.get(
    '/v1/runs',
    {
      config: { role: 'viewer' },
      schema: {
        summary: 'List runs of your tenant, newest first',
        querystring: ListQuery,
        response: { 200: RunList, ...problemResponses },
      },
    },
    async (request) => {
      const { tenant } = principalOf(request);
      const q = request.query;
      const labels = Object.fromEntries(
        (q.label ?? []).map((pair) => [
          pair.slice(0, pair.indexOf('=')),
          pair.slice(pair.indexOf('=') + 1),
        ]),
      );
      return listRuns(ctx.store, {
        tenant,
        ...(q.state && { state: q.state }),
        ...(q.kind && { kind: q.kind }),
        labels,
        limit: q.limit,
        ...(q.cursor && { cursor: q.cursor }),
      });
    },
  );

  app.get(
    '/v1/runs/compare',
    {
      config: { role: 'viewer' },
      schema: {
        summary: 'Compare runs of one kind: the spec fields that differ, and final metrics',
        querystring: CompareQuery,
        response: { 200: RunComparison, ...problemResponses },
      },
    },
    async (request) => {
      const { tenant } = principalOf(request);
      return compareRuns(ctx, tenant, request.query.run);
    },
  );

  app.get(
    '/v1/runs/:id',
    {
      config: { role: 'viewer' },
      schema: {
        summary: 'Get a run, with its transition history',
        params: RunIdParams,
        response: { 200: RunResource, ...problemResponses },
      },
    },
    async (request, reply) => {
      const { tenant } = principalOf(request);
      const view = await getRunView(ctx.store, request.params.id, {
        tenant,
        workerTtlSeconds: ctx.settings.workerTtlSeconds,
      });
      if (!view) throw runNotFound(request.params.id);
      const reason = waitingReason({ tenant, pool: view.hash.pool ?? '' }, view.waiting);
      // Serialised from the stored JSON (same shape as RunResource, which documents it); Fastify
      // sends a string payload with a JSON content type as is, so the cast only satisfies typing.
      const json = runViewJson(view, reason) as unknown as RunResource;
      return reply.type('application/json; charset=utf-8').send(json);
    },
  );

  app.post(
    '/v1/runs/:id/cancel',
    {
      config: { role: 'submitter' },
      preValidation: emptyBodyAsObject,
      schema: {
        summary: 'Cancel a run (at once if waiting; at the next step boundary if running)',
        params: RunIdParams,
        body: CancelBody,
        response: { 200: RunResource, 202: RunResource, ...problemResponses },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      // The caller's text is the reason, as written; who asked is recorded beside it
      // (Transition.principal), so a reason cannot claim to be someone else's cancel.
      const result = await cancelRun(ctx, principal.tenant, request.params.id, {
        principal: principal.name,
        reason: request.body.reason ?? 'cancel requested',
      });
      return reply.code(result.immediate ? 200 : 202).send(result.run);
    },
  );

  app.post(
    '/v1/runs/:id/pause',
    {
      config: { role: 'submitter' },
      preValidation: emptyBodyAsObject,
      schema: {
        summary:
          'Pause a run (at once if waiting; at the next step boundary, after a checkpoint, if running)',
        params: RunIdParams,
        body: ReasonBody,
        response: { 200: RunResource, 202: RunResource, ...problemResponses },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const reason = byPrincipal(principal.name, request.body.reason, 'requested');
      const result = await pauseRun(ctx, principal.tenant, request.params.id, reason);
      return reply.code(result.immediate ? 200 : 202).send(result.run);
    },
  );

  app.post(
    '/v1/runs/:id/resume',
    {
      config: { role: 'submitter' },
      preValidation: emptyBodyAsObject,
      schema: {
        summary: 'Resume a paused run: queued again, it continues from its checkpoint',
        params: RunIdParams,
        body: ReasonBody,
        response: { 200: RunResource, ...problemResponses },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const reason = byPrincipal(principal.name, request.body.reason, 'resumed');
      return resumePausedRun(ctx, principal.tenant, request.params.id, reason);
    },
  );

  app.get(
    '/v1/runs/:id/metrics',
    {
      config: { role: 'viewer' },
      schema: {
        summary: 'Per-step metric history',
        params: RunIdParams,
        querystring: MetricsQuery,
        response: { 200: StepHistory, ...problemResponses },
      },
    },
    async (request, reply) => {
      const { tenant } = principalOf(request);
      const runId = request.params.id;
      if (!(await getRun(ctx.store, runId, { tenant }))) throw runNotFound(runId);
      const names = request.query.names
        ?.split(',')
        .map((n) => n.trim())
        .filter(Boolean);
      const json = await stepHistoryJson(ctx, runId, {
        fromStep: request.query.fromStep,
        limit: request.query.limit,
        ...(names && { names }),
      });
      // The stored records as they are (StepHistory documents the shape); Fastify sends a string
      // payload with a JSON content type as is, so the cast only satisfies typing.
      return reply
        .type('application/json; charset=utf-8')
        .send(json as unknown as Static<typeof StepHistory>);
    },
  );
};
