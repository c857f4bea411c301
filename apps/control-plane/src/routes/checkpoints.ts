// Checkpoint routes: GET /v1/runs/{id}/checkpoints (the catalogue). Viewer role, tenant-scoped
// like GET /v1/runs/{id}.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { CheckpointList } from '@anneal/protocol';
import type { AppContext } from '../context.ts';
import { principalOf } from '../plugins/auth.ts';
import { checkpointList } from '../services/checkpoints.ts';
import { RunIdParams, problemResponses } from './schemas.ts';

export const checkpointRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (
  app,
  { ctx },
) => {
  app.get(
    '/v1/runs/:id/checkpoints',
    {
      config: { role: 'viewer' },
      schema: {
        summary:
          'Checkpoint catalogue: every checkpoint the run recorded (kept or deleted by retention), with its step metrics and the runs that start from it',
        params: RunIdParams,
        response: { 200: CheckpointList, ...problemResponses },
      },
    },
    async (request) => {
      const { tenant } = principalOf(request);
      return checkpointList(ctx, tenant, request.params.id);
    },
  );
};
