// buildApp(deps): the Fastify app, separate from listen() so tests drive it with inject().
// Wires single-concern plugins; owns its pool queues and metrics registry, not the Redis client.
import path from 'node:path';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Redis } from 'ioredis';
import type { DatasetFacts, OperatorConfig } from '@anneal/protocol';
import {
  DEFAULT_ARTIFACT_DIR,
  DEFAULT_PREFIX,
  type ReplicationOptions,
  createPoolQueues,
  createStoreContext,
  readGeneration,
  replicatedSince,
} from '@anneal/store';
import { type AppContext, type AppSettings, DEFAULT_SETTINGS } from './context.ts';
import { createEnqueueRelay } from './jobs/outbox.ts';
import { createTokenIndex, installAuth } from './plugins/auth.ts';
import { defaultConsoleDir, installConsole } from './plugins/console.ts';
import { installDocs } from './plugins/docs.ts';
import { serializeRequest } from './plugins/log-redaction.ts';
import { createAppMetrics, installMetrics } from './plugins/metrics.ts';
import {
  MAX_PARAM_LENGTH,
  clientErrorHandler,
  frameworkErrors,
  installProblemHandlers,
} from './plugins/problem.ts';
import { installRateLimit } from './plugins/rate-limit.ts';
import { requestIdOf } from './plugins/request-id.ts';
import { checkpointRoutes } from './routes/checkpoints.ts';
import { eventRoutes } from './routes/events.ts';
import { healthRoutes } from './routes/health.ts';
import { itemRoutes } from './routes/items.ts';
import { rolloutRoutes } from './routes/rollouts.ts';
import { resultRoutes } from './routes/results.ts';
import { runRoutes } from './routes/runs.ts';
import { submitRoutes } from './routes/submit.ts';
import { sweepRoutes } from './routes/sweeps.ts';
import { usageRoutes } from './routes/usage.ts';
import { workerRoutes } from './routes/workers.ts';
import { EventHub } from './infra/event-hub.ts';
import { FileCache } from './infra/file-cache.ts';
import { createLostDataAudit } from './jobs/audit.ts';
import { createLostWorkerSweeper } from './jobs/lost-workers.ts';

export interface AppDeps {
  operator: OperatorConfig;
  /** What validating the registered datasets found (loadOperatorConfig); default: nothing. */
  datasetFacts?: DatasetFacts;
  /** Command connection (shared; the caller closes it). */
  redis: Redis;
  /** Acknowledged writes (a submission's 201, a cancel, state changes) wait for `replicas` on
   * this connection (the caller closes it); absent: acknowledged once the primary has them. */
  durable?: { redis: Redis; replication: ReplicationOptions };
  /** A fresh connection for each blocking reader (SSE). */
  createBlockingClient: () => Redis;
  /** The workers' artifact root (shared storage, read only here); default
   * `.anneal/artifacts` under the working directory, as the worker's. */
  artifactDir?: string;
  /** API keys of Tinker-compatible trainers by endpoint name (checkpoint export). */
  trainerApiKeys?: Readonly<Record<string, string>>;
  /** Key prefix, a Redis Cluster hash tag; default `{anneal}`. */
  prefix?: string;
  settings?: Partial<AppSettings>;
  /** A pino logger; default: no logging. */
  logger?: FastifyBaseLogger;
  /** Export process_* / nodejs_* metrics (default true). */
  defaultMetrics?: boolean;
  /** The built web console (scripts/bundle-console.mjs); default: this package's dist/console. */
  consoleDir?: string;
}

const silentLog = { warn: () => {} };

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const settings: AppSettings = { ...DEFAULT_SETTINGS, ...deps.settings };
  const store = createStoreContext(
    deps.redis,
    deps.prefix ?? DEFAULT_PREFIX,
    deps.durable ? { durable: deps.durable } : {},
  );
  const blocking = deps.createBlockingClient();
  // BullMQ defines ~50 Lua commands on its connection; on the store's auto-pipelined client every
  // pipeline would copy them all, so the queues get a connection of their own.
  const queueConnection = deps.redis.duplicate({ enableAutoPipelining: false });
  // Its errors during a Redis outage are the request client's, which logs the first of each.
  const queues = createPoolQueues(queueConnection, store.prefix, () => {});
  const ctx: AppContext = {
    store,
    queues,
    operator: deps.operator,
    datasetFacts: deps.datasetFacts ?? {},
    artifactDir: path.resolve(deps.artifactDir ?? DEFAULT_ARTIFACT_DIR),
    trainerApiKeys: deps.trainerApiKeys ?? {},
    files: new FileCache(settings.runFileCacheBytes),
    settings,
    metrics: createAppMetrics(deps.defaultMetrics ?? true),
    relay: createEnqueueRelay(store, queues, deps.logger ?? silentLog),
    createBlockingClient: deps.createBlockingClient,
    events: new EventHub({
      prefix: store.prefix,
      blocking,
      ...(store.durable && {
        replicated: {
          generation: () => readGeneration(store, blocking),
          confirm: (since: number) => replicatedSince(store, blocking, since),
        },
      }),
      control: deps.redis,
      blockMs: settings.sseKeepAliveMs,
      limits: { perOwner: settings.sseMaxStreamsPerToken, total: settings.sseMaxStreams },
      log: deps.logger ?? silentLog,
    }),
  };

  const lostWorkers = createLostWorkerSweeper(ctx, deps.logger ?? silentLog);
  const lostData = createLostDataAudit(ctx, deps.redis, deps.logger ?? silentLog, {
    everyMs: settings.lostDataAuditMs,
  });

  const app = Fastify({
    ...(deps.logger
      ? { loggerInstance: deps.logger.child({}, { serializers: { req: serializeRequest } }) }
      : { logger: false }),
    bodyLimit: settings.bodyLimitBytes,
    // Fastify's default (0) turns Node's request timeout off: a body trickled one byte every few
    // seconds would hold its connection forever. Node must get it when the server is created:
    // lowered afterwards from Node's own default, it is not enforced (Node 20).
    requestTimeout: settings.requestTimeoutMs,
    http: {
      requestTimeout: settings.requestTimeoutMs,
      headersTimeout: Math.min(60_000, settings.requestTimeoutMs),
      connectionsCheckingInterval: settings.connectionsCheckMs,
    },
    requestIdHeader: false,
    genReqId: requestIdOf,
    return503OnClosing: true,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    frameworkErrors,
    clientErrorHandler,
    ajv: {
      customOptions: {
        removeAdditional: false,
        coerceTypes: 'array',
        useDefaults: true,
        allErrors: true,
      },
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  installProblemHandlers(app);
  installAuth(
    app,
    createTokenIndex(deps.operator),
    await installRateLimit(app, store, deps.operator),
  );
  await installDocs(app); // first: @fastify/swagger documents only routes added after it
  installMetrics(app, ctx);
  installConsole(app, deps.consoleDir ?? defaultConsoleDir());
  await app.register(healthRoutes, { ctx });
  await app.register(submitRoutes, { ctx });
  await app.register(runRoutes, { ctx });
  await app.register(sweepRoutes, { ctx });
  await app.register(resultRoutes, { ctx });
  await app.register(itemRoutes, { ctx });
  await app.register(checkpointRoutes, { ctx });
  await app.register(rolloutRoutes, { ctx });
  await app.register(usageRoutes, { ctx });
  await app.register(eventRoutes, { ctx });
  await app.register(workerRoutes, { ctx });

  app.addHook('onReady', async () => {
    // Entries a crash left behind are sent by a first sweep now (in the background: readiness
    // must not wait on Redis), then the relay keeps sweeping.
    ctx.relay
      .sweep(0)
      .catch((error: unknown) => app.log.warn({ err: error }, 'outbox sweep failed'));
    ctx.relay.start();
    lostWorkers.start();
    lostData.start();
  });
  // Before the server stops accepting: open SSE streams end now (their clients resume on another
  // replica with Last-Event-ID) instead of holding the shutdown until they disconnect.
  app.addHook('preClose', async () => {
    await ctx.events.close();
  });
  app.addHook('onClose', async () => {
    await lostWorkers.close();
    await lostData.close();
    await ctx.relay.close();
    await ctx.queues.close();
    // quit() would wait forever on a connection that is down; then just drop it.
    if (queueConnection.status === 'ready') await queueConnection.quit().catch(() => {});
    queueConnection.disconnect();
    ctx.metrics.close();
  });
  return app;
}
