// GET /v1/pools, GET /v1/workers, POST /v1/workers/{id}/drain.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { PoolList, WorkerList, WorkerRecord } from '@anneal/protocol';
import { listWorkers, requestDrain } from '@anneal/store';
import type { AppContext } from '../context.ts';
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
    async () => ({ workers: await listWorkers(ctx.store) }),
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
      return reply.code(202).send(worker);
    },
  );
};
