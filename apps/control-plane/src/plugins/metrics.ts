// Prometheus metrics: a Registry owned by this app (never prom-client's global), filled through
// the telemetry catalogue (anneal_http_*, anneal_queue_*, anneal_pool_*, anneal_runs*). On each
// scrape: pools, run counts by state, and the heartbeat age of every known worker (live, or gone
// without a clean shutdown — the lost-worker alert reads it, since a crashed worker's own series
// vanish with its scrape target). Run state transitions (and queue waits) are followed from the
// store's transition log while the app runs.
import type { FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { knownWorkers, runCounts } from '@anneal/store';
import { type MetricsSink, createMetrics } from '@anneal/telemetry';
import type { AppContext } from '../context.ts';
import { observePools } from '../services/pools.ts';
import { type TransitionFollower, followTransitions } from '../jobs/transition-metrics.ts';

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

  const metricsSchema = {
    summary: 'Prometheus metrics, text exposition format (no token needed)',
    produces: ['text/plain'],
    security: [],
  };
  app.get('/metrics', { schema: metricsSchema }, async (_request, reply) => {
    const now = new Date();
    const [pools, counts] = await Promise.all([observePools(ctx, now), runCounts(ctx.store)]);
    ctx.metrics.emit('runs:observed', { counts });
    const known = await Promise.all(pools.map((p) => knownWorkers(ctx.store, p.name, now)));
    ctx.metrics.emit('workers:observed', {
      workers: known.flat().map((w) => ({
        pool: w.pool,
        worker: w.id,
        heartbeatAgeSeconds: (now.getTime() - w.lastHeartbeatMs) / 1000,
      })),
    });
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
