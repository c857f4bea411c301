// The one way the control plane and workers open a long-lived Redis client. ioredis reconnects by
// itself, and without an 'error' listener every failed attempt prints "[ioredis] Unhandled error
// event"; this logs the first error of each outage once (URL without its password) and stays
// quiet until the client is ready again.
import { Redis, type RedisOptions } from 'ioredis';
import { redactRedisUrl } from './reachable.ts';

/** The part of a pino/Fastify logger used here. */
export interface RedisConnectionLogger {
  warn(fields: Record<string, unknown>, message: string): void;
}

/** A client for `url` with `options`, logging the first error of each outage to `logger`. */
export function connectRedis(
  url: string,
  logger: RedisConnectionLogger,
  options: RedisOptions = {},
): Redis {
  const client = new Redis(url, options);
  let reported = false;
  client.on('ready', () => (reported = false));
  client.on('error', (error: Error) => {
    if (reported) return;
    reported = true;
    logger.warn({ redis: redactRedisUrl(url), err: error.message }, 'Redis connection error');
  });
  return client;
}
