// Prometheus metrics: a Registry owned by this app (never prom-client's global), filled through
// the telemetry catalogue (anneal_http_*, anneal_queue_*, anneal_pool_*, anneal_runs*). Pools and
// run counts by state are observed on each scrape; run state transitions (and queue waits) are
// followed from the store's transition log while the app runs.
import type { FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { runCounts } from '@anneal/store';
import { type MetricsSink, createMetrics } from '@anneal/telemetry';
import type { AppContext } from '../context.ts';
import { observePools } from '../services/pools.ts';
import { type TransitionFollower, followTransitions } from '../services/transition-metrics.ts';

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

  let follower: TransitionFollower | undefined;
  app.addHook('onReady', async () => {
    follower = followTransitions(ctx, app.log);
  });
  app.addHook('onClose', async () => {
    await follower?.stop();
  });

  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    const [pools, counts] = await Promise.all([observePools(ctx), runCounts(ctx.store)]);
    ctx.metrics.emit('runs:observed', { counts });
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
