// Checkpoint routes: GET /v1/runs/{id}/checkpoints (the catalogue, paged) and
// GET /v1/runs/{id}/checkpoints/{step}/export (the weights and a manifest, as a tar). Viewer role,
// tenant-scoped like GET /v1/runs/{id}.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Readable } from 'node:stream';
import { Type } from '@sinclair/typebox';
import { CheckpointList, RUN_ID_PATTERN } from '@anneal/protocol';
import type { AppContext } from '../context.ts';
import { principalOf } from '../plugins/auth.ts';
import { checkpointList } from '../services/results/checkpoints.ts';
import { checkpointExport } from '../services/results/export.ts';
import { tarStream } from '../infra/tar-stream.ts';
import { RunIdParams, StringEnum, pageQueryFields, problemResponses } from './schemas.ts';

const CatalogueQuery = Type.Object(
  {
    status: Type.Optional(
      StringEnum(
        ['kept', 'deleted', 'all'] as const,
        'kept (default), deleted by retention, or all; the summary counts both whatever this is.',
      ),
    ),
    from: Type.Optional(Type.Integer({ minimum: 0, description: 'Steps from this one.' })),
    to: Type.Optional(Type.Integer({ minimum: 0, description: 'Steps up to this one.' })),
    order: pageQueryFields.order,
    limit: pageQueryFields.limit,
    cursor: pageQueryFields.cursor,
  },
  { additionalProperties: false },
);

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
          'Checkpoint catalogue, paged: the checkpoints the run recorded (kept, or deleted by retention) in step order, with their step metrics and the runs that start from them, and a summary of the whole catalogue',
        params: RunIdParams,
        querystring: CatalogueQuery,
        response: { 200: CheckpointList, ...problemResponses },
      },
    },
    async (request) => {
      const { tenant } = principalOf(request);
      const { status, order, ...query } = request.query;
      return checkpointList(ctx, tenant, request.params.id, {
        ...query,
        status: status ?? 'kept',
        order: order ?? 'asc',
      });
    },
  );

  app.get(
    '/v1/runs/:id/checkpoints/:step/export',
    {
      config: { role: 'viewer' },
      schema: {
        summary:
          'Export a kept checkpoint: its weights in the format people deploy (the ONNX model of an embedded run) and manifest.json (base model, run, step, spec hash, metrics), as a tar',
        params: StepParams,
        response: {
          200: {
            description: 'POSIX tar: manifest.json, then the weight files',
            content: { 'application/x-tar': { schema: TarBody } },
          },
          ...problemResponses,
        },
      },
    },
    async (request, reply) => {
      const { tenant } = principalOf(request);
      const { id, step } = request.params;
      const exported = await checkpointExport(ctx, tenant, id, step);
      const body = tarStream(exported.entries);
      body.once('close', () => void exported.cleanup());
      return reply
        .type('application/x-tar')
        .header('content-disposition', `attachment; filename="${id}-step-${step}.tar"`)
        .send(body);
    },
  );
};

/** The body is a stream (tarStream); the document describes its bytes. */
const TarBody = Type.Unsafe<Readable>({ type: 'string', format: 'binary' });

const StepParams = Type.Object({
  id: Type.String({ pattern: RUN_ID_PATTERN }),
  step: Type.Integer({ minimum: 0, description: 'A step the run checkpointed.' }),
});
