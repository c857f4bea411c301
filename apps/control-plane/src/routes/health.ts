// GET /healthz (process serves) and GET /readyz (Redis answers PING).
import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../context.ts';
import { AnnealError } from '../errors.ts';

export const healthRoutes: FastifyPluginAsync<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async () => {
    try {
      // An offline ioredis client queues commands instead of failing: bound the wait.
      await Promise.race([
        ctx.store.redis.ping(),
        new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), 1000).unref()),
      ]);
    } catch {
      throw new AnnealError('ANNEAL_ERR_UNAVAILABLE', 'Redis does not answer PING');
    }
    return { status: 'ready' };
  });
};
