// GET /healthz (process serves) and GET /readyz (Redis answers PING).
import type { FastifyPluginAsync } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../context.ts';
import { AnnealError } from '../errors.ts';
import { problemResponses } from './schemas.ts';

export const healthRoutes: FastifyPluginAsync<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.get(
    '/healthz',
    {
      schema: {
        summary: 'Liveness: the process serves (no token needed)',
        security: [],
        response: { 200: Type.Object({ status: Type.Literal('ok') }) },
      },
    },
    async () => ({ status: 'ok' as const }),
  );
  const readyzSchema = {
    summary: 'Readiness: Redis answers PING (no token needed)',
    security: [],
    response: { 200: Type.Object({ status: Type.Literal('ready') }), ...problemResponses },
  };
  app.get('/readyz', { schema: readyzSchema }, async () => {
    try {
      // An offline ioredis client queues commands instead of failing: bound the wait.
      await Promise.race([
        ctx.store.redis.ping(),
        new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), 1000).unref()),
      ]);
    } catch {
      throw new AnnealError('ANNEAL_ERR_UNAVAILABLE', 'Redis does not answer PING');
    }
    return { status: 'ready' as const };
  });
};
