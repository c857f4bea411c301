// Sweep routes: POST /v1/sweeps (JSON or YAML, kept raw for the protocol's parser, like
// POST /v1/runs), GET /v1/sweeps, GET /v1/sweeps/{id}, POST /v1/sweeps/{id}/cancel, /pause
// and /resume (docs/api.md "Sweeps").
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { SWEEP_ID_PATTERN, SweepList, SweepResource, SweepSpec } from '@anneal/protocol';
import { getSweep, listSweeps } from '@anneal/store';
import type { AppContext } from '../context.ts';
import { principalOf } from '../plugins/auth.ts';
import { type SweepAction, controlSweep, sweepNotFound } from '../services/sweeps/control.ts';
import { submitSweep } from '../services/sweeps/submit.ts';
import { sweepSummaries, sweepView } from '../services/sweeps/view.ts';
import { SPEC_TYPES, documentText, idempotencyKeyOf } from './request-text.ts';
import { emptyBodyAsObject, problemResponses } from './schemas.ts';

const SweepIdParams = Type.Object({ id: Type.String({ pattern: SWEEP_ID_PATTERN }) });

const ListQuery = Type.Object(
  {
    limit: Type.Integer({ minimum: 1, maximum: 200, default: 50 }),
    cursor: Type.Optional(Type.String({ pattern: SWEEP_ID_PATTERN })),
  },
  { additionalProperties: false },
);

const ReasonBody = Type.Optional(
  Type.Object(
    { reason: Type.Optional(Type.String({ maxLength: 500 })) },
    { additionalProperties: false },
  ),
);

const ACTIONS: Record<SweepAction, { summary: string; verb: string }> = {
  cancel: {
    summary: 'Cancel every run of the sweep that has not ended (as POST /v1/runs/{id}/cancel)',
    verb: 'cancelled',
  },
  pause: {
    summary: 'Pause every run of the sweep that has not ended (as POST /v1/runs/{id}/pause)',
    verb: 'requested',
  },
  resume: {
    summary: 'Resume every paused run of the sweep (as POST /v1/runs/{id}/resume)',
    verb: 'resumed',
  },
};

/** POST /v1/sweeps: its own plugin, so its body parsers (raw text) stay its own. */
const submitSweepRoute: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser(SPEC_TYPES, { parseAs: 'string' }, (_request, body, done) => {
    done(null, body);
  });

  app.post(
    '/v1/sweeps',
    {
      config: { role: 'submitter' },
      // The protocol validates the body (grid paths, size, every run spec); the schema documents it.
      validatorCompiler: () => () => true,
      schema: {
        summary: 'Submit a sweep: a base run spec and a grid, one run per grid point',
        consumes: SPEC_TYPES,
        headers: Type.Object({
          'idempotency-key': Type.Optional(
            Type.String({ description: 'Same key + same body returns the same sweep.' }),
          ),
        }),
        body: SweepSpec,
        response: { 200: SweepResource, 201: SweepResource, ...problemResponses },
      },
    },
    async (request, reply) => {
      const { tenant } = principalOf(request);
      const key = idempotencyKeyOf(request);
      const body = documentText(request.body, 'ANNEAL_ERR_SWEEP_INVALID', 'expected a sweep');
      const result = await submitSweep(ctx, {
        tenant,
        body,
        ...(key !== undefined && { idempotencyKey: key }),
      });
      return reply
        .code(result.created ? 201 : 200)
        .header('location', `/v1/sweeps/${result.sweep.id}`)
        .send(result.sweep);
    },
  );
};

export const sweepRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  await app.register(submitSweepRoute, { ctx });

  app.get(
    '/v1/sweeps',
    {
      config: { role: 'viewer' },
      schema: {
        summary: 'List sweeps of your tenant, newest first',
        querystring: ListQuery,
        response: { 200: SweepList, ...problemResponses },
      },
    },
    async (request) => {
      const { tenant } = principalOf(request);
      const page = await listSweeps(ctx.store, {
        tenant,
        limit: request.query.limit,
        ...(request.query.cursor && { cursor: request.query.cursor }),
      });
      return { sweeps: await sweepSummaries(ctx, page.sweeps), nextCursor: page.nextCursor };
    },
  );

  app.get(
    '/v1/sweeps/:id',
    {
      config: { role: 'viewer' },
      schema: {
        summary: 'Get a sweep: runs in each state, its runs, the best run by `select`',
        params: SweepIdParams,
        response: { 200: SweepResource, ...problemResponses },
      },
    },
    async (request) => {
      const { tenant } = principalOf(request);
      const record = await getSweep(ctx.store, request.params.id, { tenant });
      if (!record) throw sweepNotFound(request.params.id);
      return sweepView(ctx, record);
    },
  );

  for (const [action, { summary, verb }] of Object.entries(ACTIONS) as [
    SweepAction,
    (typeof ACTIONS)[SweepAction],
  ][]) {
    app.post(
      `/v1/sweeps/:id/${action}`,
      {
        config: { role: 'submitter' },
        preValidation: emptyBodyAsObject,
        schema: {
          summary,
          params: SweepIdParams,
          body: ReasonBody,
          response: { 200: SweepResource, ...problemResponses },
        },
      },
      async (request) => {
        const principal = principalOf(request);
        const why = request.body?.reason;
        // Cancel records the caller's text as the reason (the principal beside it), like a run
        // cancel; pause and resume put who asked in the reason, like theirs.
        const reason =
          action === 'cancel'
            ? (why ?? `sweep ${request.params.id} cancelled`)
            : `${verb} by ${principal.name} for sweep ${request.params.id}${why ? `: ${why}` : ''}`;
        return controlSweep(ctx, principal.tenant, request.params.id, action, {
          principal: principal.name,
          reason,
        });
      },
    );
  }
};
