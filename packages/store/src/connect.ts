// The one way the control plane and workers open a long-lived Redis client. ioredis reconnects by
// itself, and without an 'error' listener every failed attempt prints "[ioredis] Unhandled error
// event"; this logs the first error of each outage once (URL without its password) and stays
// quiet until the client is ready again.
import type { Redis, RedisOptions } from 'ioredis';
import { redactRedisUrl } from './reachable.ts';
import { createRedisClient } from './redis-url.ts';

/** The part of a pino/Fastify logger used here. */
export interface RedisConnectionLogger {
  warn(fields: Record<string, unknown>, message: string): void;
}

/** A client for `url` (any redis-url.ts form) with `options`, logging the first error of each outage to `logger`. */
export function connectRedis(
  url: string,
  logger: RedisConnectionLogger,
  options: RedisOptions = {},
): Redis {
  const client = createRedisClient(url, options);
  let reported = false;
  client.on('ready', () => (reported = false));
  client.on('error', (error: Error) => {
    if (reported) return;
    reported = true;
    logger.warn({ redis: redactRedisUrl(url), err: error.message }, 'Redis connection error');
  });
  return client;
}
