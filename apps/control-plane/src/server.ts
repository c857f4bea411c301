// startControlPlane: env -> Redis PING (deadline) -> operator config -> Redis -> reconcile ->
// buildApp -> listen.
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { createLogger } from '@anneal/telemetry';
import {
  checkRedisReachable,
  connectRedis,
  createStoreContext,
  parseReplicaRequirement,
} from '@anneal/store';
import { buildApp } from './app.ts';
import { type LoadedOperatorConfig, loadOperatorConfig } from './config.ts';
import type { ControlPlaneEnv } from './env.ts';
import { reconcile } from './jobs/reconcile.ts';

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
  /** Where the trainer API keys the operator config names (`apiKeyEnv`) are read, once at
   * start-up (the process environment): checkpoint export downloads hosted exports with them. */
  secretEnv?: Readonly<Record<string, string | undefined>>;
}

/** API keys of the operator config's Tinker-compatible trainers, by endpoint name. */
function trainerApiKeys(
  operator: LoadedOperatorConfig['operator'],
  secretEnv: Readonly<Record<string, string | undefined>>,
): Record<string, string> {
  const keys: Record<string, string> = {};
  for (const [name, entry] of Object.entries(operator.trainers)) {
    const value =
      entry.type === 'tinker' && entry.apiKeyEnv ? secretEnv[entry.apiKeyEnv] : undefined;
    if (value) keys[name] = value;
  }
  return keys;
}

/**
 * `requests`: the client of the request path. While Redis is unreachable its commands fail at
 * once (no offline queue, no retry after a dropped connection), so a request answers
 * 503 ANNEAL_ERR_UNAVAILABLE instead of waiting, and nothing queued by a request the client
 * gave up on runs when Redis comes back (a retried POST cannot create a second run).
 * `blocking`: SSE readers (XREAD BLOCK), which wait out an outage and resume.
 */
function redisClient(
  url: string,
  logger: FastifyBaseLogger,
  use: 'requests' | 'durable' | 'blocking',
): Redis {
  // Auto-pipelining batches the commands concurrent requests issue in one tick into one write.
  // `durable` (acknowledged writes, each followed by WAIT) fails fast like `requests`.
  return connectRedis(
    url,
    logger,
    use === 'requests'
      ? { enableOfflineQueue: false, maxRetriesPerRequest: 0, enableAutoPipelining: true }
      : use === 'durable'
        ? { enableOfflineQueue: false, maxRetriesPerRequest: 0 }
        : { maxRetriesPerRequest: null, enableAutoPipelining: true },
  );
}

/** Resolves once `client` is connected (commands before that would fail without an offline
 * queue); rejects with the connection error after `timeoutMs`. */
async function connected(client: Redis, timeoutMs: number): Promise<void> {
  if (client.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      client.off('ready', ready);
      reject(new Error(`Redis not ready after ${timeoutMs} ms`));
    }, timeoutMs);
    const ready = () => {
      clearTimeout(timer);
      resolve();
    };
    client.once('ready', ready);
  });
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
  const redis = redisClient(env.REDIS_URL, logger, 'requests');
  const durable = redisClient(env.REDIS_URL, logger, 'durable');
  const replication = {
    replicas: parseReplicaRequirement(env.ANNEAL_REDIS_WAIT_REPLICAS),
    timeoutMs: env.ANNEAL_REDIS_WAIT_TIMEOUT_MS,
  };
  const blockingClients = new Set<Redis>();
  try {
    await connected(redis, env.ANNEAL_REDIS_TIMEOUT_MS);
    await connected(durable, env.ANNEAL_REDIS_TIMEOUT_MS);
    const store = createStoreContext(redis, env.ANNEAL_KEY_PREFIX);
    await reconcile(store, loaded.operator);
  } catch (error) {
    redis.disconnect();
    durable.disconnect();
    throw error;
  }
  const app = await buildApp({
    operator: loaded.operator,
    ...(loaded.datasetFacts && { datasetFacts: loaded.datasetFacts }),
    redis,
    durable: { redis: durable, replication },
    prefix: env.ANNEAL_KEY_PREFIX,
    artifactDir: env.ANNEAL_ARTIFACT_DIR,
    trainerApiKeys: trainerApiKeys(loaded.operator, options.secretEnv ?? {}),
    createBlockingClient: () => {
      const client = redisClient(env.REDIS_URL, logger, 'blocking');
      blockingClients.add(client);
      client.once('end', () => blockingClients.delete(client));
      return client;
    },
    settings: {
      bodyLimitBytes: env.ANNEAL_BODY_LIMIT_BYTES,
      requestTimeoutMs: env.ANNEAL_REQUEST_TIMEOUT_MS,
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
      await durable.quit().catch(() => durable.disconnect());
    },
  };
}
