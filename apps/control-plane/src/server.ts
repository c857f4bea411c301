// startControlPlane: env -> Redis PING (deadline) -> operator config -> Redis -> reconcile ->
// buildApp -> listen.
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { createLogger } from '@anneal/telemetry';
import { checkRedisReachable, createStoreContext, redactRedisUrl } from '@anneal/store';
import { buildApp } from './app.ts';
import { type LoadedOperatorConfig, loadOperatorConfig } from './config.ts';
import type { ControlPlaneEnv } from './env.ts';
import { reconcile } from './services/reconcile.ts';

export interface RunningControlPlane {
  app: FastifyInstance;
  /** e.g. http://127.0.0.1:8080 */
  url: string;
  port: number;
  /** Local mode token, when one was generated or taken from ANNEAL_TOKEN. */
  localToken?: LoadedOperatorConfig['localToken'];
  close(): Promise<void>;
}

export interface StartOptions {
  env: ControlPlaneEnv;
  /** Already-loaded operator config (else loaded from env). */
  operator?: LoadedOperatorConfig;
  /** Default: JSON lines on stdout at env.ANNEAL_LOG_LEVEL. */
  logger?: FastifyBaseLogger;
}

function redisClient(url: string, logger: FastifyBaseLogger): Redis {
  // Auto-pipelining batches the commands concurrent requests issue in one tick into one write.
  const client = new Redis(url, { maxRetriesPerRequest: null, enableAutoPipelining: true });
  // ioredis reconnects by itself; without a listener every failed attempt would print
  // "[ioredis] Unhandled error event". Log the first error of each outage only.
  let reported = false;
  client.on('ready', () => (reported = false));
  client.on('error', (error: Error) => {
    if (reported) return;
    reported = true;
    logger.warn({ redis: redactRedisUrl(url), err: error.message }, 'Redis connection error');
  });
  return client;
}

export async function startControlPlane(options: StartOptions): Promise<RunningControlPlane> {
  const { env } = options;
  // Fail fast (RedisUnreachableError) rather than wait forever on retrying clients.
  await checkRedisReachable(env.REDIS_URL, env.ANNEAL_REDIS_TIMEOUT_MS);
  const logger =
    options.logger ?? createLogger({ name: 'control-plane', level: env.ANNEAL_LOG_LEVEL });
  const loaded =
    options.operator ??
    (await loadOperatorConfig({
      ...(env.ANNEAL_CONFIG !== undefined && { configPath: env.ANNEAL_CONFIG }),
      ...(env.ANNEAL_TOKEN !== undefined && { token: env.ANNEAL_TOKEN }),
    }));
  const redis = redisClient(env.REDIS_URL, logger);
  const blockingClients = new Set<Redis>();
  try {
    const store = createStoreContext(redis, env.ANNEAL_KEY_PREFIX);
    await reconcile(store, loaded.operator);
  } catch (error) {
    redis.disconnect();
    throw error;
  }
  const app = await buildApp({
    operator: loaded.operator,
    ...(loaded.datasetFacts && { datasetFacts: loaded.datasetFacts }),
    redis,
    prefix: env.ANNEAL_KEY_PREFIX,
    createBlockingClient: () => {
      const client = redisClient(env.REDIS_URL, logger);
      blockingClients.add(client);
      client.once('end', () => blockingClients.delete(client));
      return client;
    },
    settings: {
      bodyLimitBytes: env.ANNEAL_BODY_LIMIT_BYTES,
      workerTtlSeconds: env.ANNEAL_WORKER_TTL_SECONDS,
    },
    logger,
  });
  await app.listen({ host: env.ANNEAL_HOST, port: env.ANNEAL_PORT });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : env.ANNEAL_PORT;
  const host = env.ANNEAL_HOST === '0.0.0.0' ? '127.0.0.1' : env.ANNEAL_HOST;
  return {
    app,
    url: `http://${host}:${port}`,
    port,
    ...(loaded.localToken && { localToken: loaded.localToken }),
    async close() {
      for (const client of blockingClients) client.disconnect();
      await app.close();
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
