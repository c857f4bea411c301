// Prometheus metrics: a Registry owned by this app (never prom-client's global), filled through
// the telemetry catalogue (anneal_http_*, anneal_queue_*, anneal_pool_*). Pools are observed on
// each scrape.
import type { FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { type MetricsSink, createMetrics } from '@anneal/telemetry';
import type { AppContext } from '../context.ts';
import { observePools } from '../services/pools.ts';

export const CONTROL_PLANE_VERSION = '0.1.0';

export function createAppMetrics(defaultMetrics: boolean): MetricsSink {
  return createMetrics(new Registry(), {
    app: 'control-plane',
    version: CONTROL_PLANE_VERSION,
    defaultMetrics,
  });
}

export function installMetrics(app: FastifyInstance, ctx: AppContext): void {
  app.addHook('onResponse', async (request, reply) => {
    ctx.metrics.emit('http:responded', {
      route: request.routeOptions.url ?? 'unmatched',
      method: request.method,
      statusCode: reply.statusCode,
      durationSeconds: reply.elapsedTime / 1000,
    });
  });

  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    const pools = await observePools(ctx);
    for (const pool of pools) {
      ctx.metrics.emit('pool:observed', {
        pool: pool.name,
        queue: pool.queue,
        oldestWaitingAgeSeconds: pool.oldestWaitingAgeSeconds,
        workers: pool.workers,
      });
    }
    return reply.type(ctx.metrics.registry.contentType).send(await ctx.metrics.registry.metrics());
  });
}
