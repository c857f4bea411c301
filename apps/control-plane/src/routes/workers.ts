// GET /v1/pools, GET /v1/workers, POST /v1/workers/{id}/drain.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { PoolList, WorkerList, WorkerRecord } from '@anneal/protocol';
import { getRun, listWorkers, requestDrain } from '@anneal/store';
import type { AppContext } from '../context.ts';
import { principalOf } from '../plugins/auth.ts';
import { workerNotFound } from '../errors.ts';
import { observePools } from '../services/pools.ts';
import { WorkerIdParams, emptyBodyAsObject, problemResponses } from './schemas.ts';

const DrainBody = Type.Object(
  {
    checkpointAndRelease: Type.Boolean({
      default: false,
      description: 'Checkpoint current runs and requeue them instead of finishing them.',
    }),
  },
  { additionalProperties: false, description: 'Optional; an empty body is fine.' },
);

/** Workers are cluster-wide, the runs on them are not: each caller sees only its tenant's. */
async function withTenantRuns(
  ctx: AppContext,
  tenant: string,
  worker: WorkerRecord,
): Promise<WorkerRecord> {
  const own = await Promise.all(
    worker.runs.map(async (id) => ((await getRun(ctx.store, id, { tenant })) ? id : undefined)),
  );
  return { ...worker, runs: own.filter((id): id is string => id !== undefined) };
}

export const workerRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (
  app,
  { ctx },
) => {
  app.get(
    '/v1/pools',
    {
      config: { role: 'viewer' },
      schema: {
        summary: 'Pools: workers online/busy/draining, slots, queue depth, oldest waiting run',
        response: { 200: PoolList, ...problemResponses },
      },
    },
    async () => ({ pools: await observePools(ctx) }),
  );

  app.get(
    '/v1/workers',
    {
      config: { role: 'viewer' },
      schema: { summary: 'Live workers', response: { 200: WorkerList, ...problemResponses } },
    },
    async (request) => {
      const { tenant } = principalOf(request);
      const workers = await listWorkers(ctx.store);
      return { workers: await Promise.all(workers.map((w) => withTenantRuns(ctx, tenant, w))) };
    },
  );

  app.post(
    '/v1/workers/:id/drain',
    {
      config: { role: 'operator' },
      preValidation: emptyBodyAsObject,
      schema: {
        summary: 'Drain a worker: no new runs; finish (or checkpoint and release) current ones',
        params: WorkerIdParams,
        body: DrainBody,
        response: { 202: WorkerRecord, ...problemResponses },
      },
    },
    async (request, reply) => {
      const release = request.body.checkpointAndRelease;
      const worker = await requestDrain(ctx.store, request.params.id, release);
      if (!worker) throw workerNotFound(request.params.id);
      return reply.code(202).send(await withTenantRuns(ctx, principalOf(request).tenant, worker));
    },
  );
};
