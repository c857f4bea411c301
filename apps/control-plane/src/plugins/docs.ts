// OpenAPI from the route schemas (the same TypeBox schemas that validate), UI at /docs.
// 3.1, not 3.0: TypeBox emits JSON Schema 2020-12 (numeric exclusiveMinimum/Maximum, `examples`
// arrays), which is exactly 3.1's Schema Object and invalid 3.0 (test/openapi.redis.test.ts
// validates the served document with @apidevtools/swagger-parser).
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { CONTROL_PLANE_VERSION } from './metrics.ts';

export async function installDocs(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
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
