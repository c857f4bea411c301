// Per-token rate limit (per client IP for requests without a valid token), counted in process and
// synced to Redis in the background so replicas share it (rate-limit-store.ts). Limits come from
// the token's `rateLimit` or the operator default. The returned limiter is run by the auth hook
// (plugins/auth.ts) between token lookup and the 401/403 decision, so failed authentication
// attempts count against the client IP.
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance } from 'fastify';
import type { RequestLimiter } from './auth.ts';
import type { OperatorConfig } from '@anneal/protocol';
import type { StoreContext } from '@anneal/store';
import { AnnealError } from '../errors.ts';
import { syncedRateLimitStore } from './rate-limit-store.ts';

export async function installRateLimit(
  app: FastifyInstance,
  store: StoreContext,
  operator: OperatorConfig,
): Promise<RequestLimiter> {
  const counters = syncedRateLimitStore(store.redis, `${store.prefix}:ratelimit:`);
  app.addHook('onClose', () => counters.close());
  await app.register(rateLimit, {
    global: false, // not per route: auth.ts calls the limiter below
    store: counters.Store,
    // Health, readiness, metrics and docs are not limited (no role in the route config).
    allowList: (request) => request.routeOptions.config.role === undefined,
    keyGenerator: (request) =>
      request.principal ? `t:${request.principal.tokenHash}` : `ip:${request.ip}`,
    max: (request) => request.principal?.rateLimit.max ?? operator.rateLimit.max,
    timeWindow: (request) =>
      (request.principal?.rateLimit.windowSeconds ?? operator.rateLimit.windowSeconds) * 1000,
    errorResponseBuilder: (_request, context) =>
      new AnnealError(
        'ANNEAL_ERR_RATE_LIMITED',
        `limit of ${context.max} requests reached; retry in ${context.after}`,
      ),
  });
  const hook = app.rateLimit();
  return async (request, reply) => {
    await hook.call(app, request, reply);
  };
}
