// OpenAPI 3 from the route schemas (the same TypeBox schemas that validate), UI at /docs.
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { CONTROL_PLANE_VERSION } from './metrics.ts';

export async function installDocs(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Anneal control plane',
        version: CONTROL_PLANE_VERSION,
        description:
          'Runs (sft | rm | grpo | eval) scheduled onto GPU worker pools. Errors are application/problem+json with a stable ANNEAL_ERR_* code; see docs/api.md.',
      },
      components: {
        securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      },
      security: [{ bearer: [] }],
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
}
