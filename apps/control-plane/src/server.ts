// startControlPlane: env -> operator config -> Redis -> reconcile -> buildApp -> listen.
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { createLogger } from '@anneal/telemetry';
import { createStoreContext } from '@anneal/store';
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

function redisClient(url: string): Redis {
  // Auto-pipelining batches the commands concurrent requests issue in one tick into one write.
  return new Redis(url, { maxRetriesPerRequest: null, enableAutoPipelining: true });
}

export async function startControlPlane(options: StartOptions): Promise<RunningControlPlane> {
  const { env } = options;
  const loaded =
    options.operator ??
    (await loadOperatorConfig({
      ...(env.ANNEAL_CONFIG !== undefined && { configPath: env.ANNEAL_CONFIG }),
      ...(env.ANNEAL_TOKEN !== undefined && { token: env.ANNEAL_TOKEN }),
    }));
  const redis = redisClient(env.REDIS_URL);
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
    redis,
    prefix: env.ANNEAL_KEY_PREFIX,
    createBlockingClient: () => {
      const client = redisClient(env.REDIS_URL);
      blockingClients.add(client);
      client.once('end', () => blockingClients.delete(client));
      return client;
    },
    settings: {
      bodyLimitBytes: env.ANNEAL_BODY_LIMIT_BYTES,
      workerTtlSeconds: env.ANNEAL_WORKER_TTL_SECONDS,
    },
    logger: options.logger ?? createLogger({ name: 'control-plane', level: env.ANNEAL_LOG_LEVEL }),
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
