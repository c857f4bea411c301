// startWorker: wires the runtime together — Redis connections, the pool's BullMQ worker with N
// run slots, registry heartbeats, cancel/drain control, /metrics — and returns a handle whose
// close() is the graceful shutdown (SIGTERM): stop taking runs, bring current runs to a step
// boundary, hand them back, exit within the grace period.
import { hostname } from 'node:os';
import { Worker } from 'bullmq';
import { poolQueueName } from '@anneal/protocol';
import {
  bullPrefix,
  checkRedisReachable,
  connectRedis,
  createStoreContext,
  removeWorker,
  requestDrain,
  transitionRun,
} from '@anneal/store';
import {
  type EventBus,
  type Logger,
  Registry,
  createEventBus,
  createLogger,
  createMetrics,
  logEvents,
} from '@anneal/telemetry';
import type { WorkerConfig } from './config.ts';
import { startMetricsServer } from './metrics/server.ts';
import { pushgatewayUrl, startPushgateway } from './metrics/pushgateway.ts';
import { EngineCache } from './resources/engine-cache.ts';
import { type EngineFactories, defaultEngineFactories } from './resources/factories.ts';
import { defaultEmbeddedEngines } from './resources/embedded.ts';
import { ResourceResolver, embeddedTrainerDirs } from './resources/resolve.ts';
import { ActiveRuns, type StopRequest } from './runtime/active-runs.ts';
import { Cleanup } from './runtime/cleanup.ts';
import { requestedStop, subscribeWorkerControl } from './runtime/control.ts';
import { startHeartbeat } from './runtime/heartbeat.ts';
import { type ExecutorTable, type ProcessorDeps, processRunJob } from './runtime/process-run.ts';
import { WORKER_VERSION } from './version.ts';
import { setHeapGrowingPercent } from './runtime/heap.ts';

export interface StartWorkerOptions {
  /** Executors by run kind; default: the real ones (executors/index.ts). Tests pass their own. */
  executors?: ExecutorTable;
  /** Replace some engine factories (e.g. the embedded engines, test doubles). */
  factories?: Partial<EngineFactories>;
  /** Default: a pino logger at config.logLevel. */
  logger?: Logger;
  /** Default: metrics/server.ts's. Tests inject a failing one (a start-up step that throws). */
  startMetricsServer?: typeof startMetricsServer;
}

export interface WorkerHandle {
  id: string;
  pool: string;
  /** URL of this worker's Prometheus endpoint. */
  metricsUrl: string;
  /** Typed events (`run:started`, `step:committed`, `worker:heartbeat`, …). */
  events: EventBus;
  /** Run ids held right now. */
  runs(): string[];
  /** Same as the control plane's drain: no new runs (and hand current ones back if asked). */
  drain(checkpointAndRelease: boolean): Promise<void>;
  /** Graceful shutdown within config.shutdownGraceSeconds. Idempotent. */
  close(): Promise<void>;
  /** What a shutdown in progress waits for (null before close() and once it is done). */
  closingStep(): string | null;
}

/**
 * Long-lived clients wait out a Redis outage (BullMQ requires maxRetriesPerRequest: null); each is
 * named `anneal-worker:<id>:<role>` in CLIENT LIST.
 */
/** The failure reason of a run whose job BullMQ failed as stalled too often. */
export function stalledTooOften(maxStalledCount: number): string {
  return (
    `its worker was lost ${maxStalledCount + 1} times in a row without a committed step or ` +
    `checkpoint in between (queue.maxStalledCount = ${maxStalledCount}, ANNEAL_MAX_STALLED_COUNT)`
  );
}

const connect = (url: string, logger: Logger, workerId: string, role: string) =>
  connectRedis(url, logger, {
    maxRetriesPerRequest: null,
    connectionName: `anneal-worker:${workerId}:${role}`,
  });

/** Its three Redis connections, closed together (quit, else disconnect). */
function openConnections(config: Readonly<WorkerConfig>, logger: Logger, cleanup: Cleanup) {
  const open = (role: string) => connect(config.redisUrl, logger, config.workerId, role);
  // `durable`: acknowledged writes (steps, checkpoint pointers, state changes) wait for their
  // replicas there (WAIT blocks its connection), so heartbeats and reads never queue behind one.
  const connections = {
    redis: open('store'),
    subscriber: open('control'),
    bull: open('queue'),
    durable: open('durable'),
  };
  cleanup.add('redis connections', () =>
    Promise.all(Object.values(connections).map((c) => c.quit().catch(() => c.disconnect()))),
  );
  return connections;
}

export async function startWorker(
  config: Readonly<WorkerConfig>,
  options: StartWorkerOptions = {},
): Promise<WorkerHandle> {
  // Fail fast (RedisUnreachableError, 5 s) instead of retrying forever below.
  await checkRedisReachable(config.redisUrl);
  setHeapGrowingPercent(config.heapGrowingPercent);
  const logger: Logger =
    options.logger ??
    createLogger({
      name: 'worker',
      level: config.logLevel,
      bindings: { pool: config.pool, worker: config.workerId },
    });
  const cleanup = new Cleanup();
  try {
    return await startSteps(config, options, logger, cleanup);
  } catch (error) {
    await cleanup.unwind(logger);
    throw error;
  }
}

/** The start-up steps; each registers in `cleanup` what closes what it opened. */
async function startSteps(
  config: Readonly<WorkerConfig>,
  options: StartWorkerOptions,
  logger: Logger,
  cleanup: Cleanup,
): Promise<WorkerHandle> {
  const { workerId, pool } = config;
  // Loaded lazily: a worker given its executors never pulls in the real ones.
  const executors: ExecutorTable =
    options.executors ?? (await import('./executors/index.ts')).EXECUTORS;
  const embedded = defaultEmbeddedEngines({ trainerDirs: embeddedTrainerDirs(config) });
  const factories = { ...defaultEngineFactories(embedded), ...options.factories };

  const {
    redis,
    subscriber,
    bull: bullConnection,
    durable,
  } = openConnections(config, logger, cleanup);
  const store = createStoreContext(redis, config.keyPrefix, {
    durable: { redis: durable, replication: config.replication },
  });
  const registry = new Registry();
  const events = createEventBus({
    onListenerError: (err, event) =>
      logger.error({ err: String(err), event }, 'telemetry listener failed'),
  });
  const metrics = createMetrics(registry, {
    app: 'worker',
    version: WORKER_VERSION,
    worker: { pool, id: workerId },
    runSeriesGraceMs: config.metrics.runSeriesGraceSeconds * 1000,
  });
  cleanup.add('metrics', () => metrics.close());
  events.onAny((name, payload) => metrics.emit(name, payload));
  logEvents(events, logger);

  const runs = new ActiveRuns();
  // Why this worker stops its runs: asked of the runs it holds (stopAll) and of a run that starts
  // afterwards (pendingStop), the same words in both.
  const shutdownStop: StopRequest = { kind: 'release', reason: `worker ${workerId} shutting down` };
  const drainStop: StopRequest = {
    kind: 'release',
    reason: `released by draining worker ${workerId}`,
  };
  const startedAt = new Date().toISOString();
  const state = { draining: false, releasing: false, shuttingDown: false };
  let idleWaiters: Array<() => void> = [];
  const onRunsChanged = () => {
    events.emit('worker:slots', { busy: runs.size, total: config.slots });
    if (runs.size === 0) {
      for (const resolve of idleWaiters) resolve();
      idleWaiters = [];
    }
  };
  const resolver = new ResourceResolver({
    store,
    config,
    factories,
    cache: new EngineCache(),
    telemetry: events,
    logger,
  });
  cleanup.add('engines', async () => {
    const engineErrors = await resolver.close();
    if (engineErrors.length > 0)
      logger.warn({ errors: engineErrors.map(String) }, 'engines failed to close');
  });
  const deps: ProcessorDeps = {
    store,
    workerId,
    config,
    executors,
    resolver,
    runs,
    telemetry: events,
    logger,
    accepting: () => !state.draining && !state.shuttingDown,
    pendingStop: () => (state.shuttingDown ? shutdownStop : state.releasing ? drainStop : null),
    onRunsChanged,
  };

  const worker = new Worker(
    poolQueueName(pool),
    (job, token) => processRunJob(deps, job, token ?? ''),
    {
      connection: bullConnection,
      prefix: bullPrefix(config.keyPrefix),
      concurrency: config.slots,
      lockDuration: config.queue.lockDurationMs,
      stalledInterval: config.queue.stalledIntervalMs,
      maxStalledCount: config.queue.maxStalledCount,
      name: workerId,
      autorun: false,
    },
  );
  const closeWorker = cleanup.add('queue worker', (force?: boolean) =>
    worker.close(force).catch((err: unknown) => logger.warn({ err: String(err) }, 'worker close')),
  );
  worker.on('error', (err) => logger.error({ err: String(err) }, 'queue worker error'));
  worker.on('lockRenewalFailed', (jobIds) => {
    for (const id of jobIds) runs.get(id)?.stop({ kind: 'lost', reason: 'job lock lost' });
  });
  worker.on('failed', (job, err) => {
    // A job BullMQ failed itself (stalled too often: its workers kept dying before the run made
    // progress; a committed step or checkpoint resets the count, store progress-script.ts) leaves
    // the run record non-terminal; record the failure there.
    if (!job?.id || !/stalled more than allowable limit/.test(err.message)) return;
    void transitionRun(store, job.id, {
      to: 'failed',
      from: ['queued', 'running', 'retrying'],
      reason: stalledTooOften(config.queue.maxStalledCount),
      fields: { error: err.message },
    }).catch((e: unknown) => logger.error({ err: String(e) }, 'could not fail a stalled run'));
  });

  const drain = (checkpointAndRelease: boolean) => {
    if (!state.draining) {
      state.draining = true;
      void worker
        .pause(true)
        .catch((err: unknown) => logger.warn({ err: String(err) }, 'pause failed'));
      logger.info('draining: taking no new runs');
    }
    if (checkpointAndRelease && !state.releasing) {
      state.releasing = true;
      runs.stopAll(drainStop);
    }
  };
  const heartbeat = startHeartbeat({
    store,
    intervalMs: config.heartbeatSeconds * 1000,
    ttlSeconds: config.heartbeatTtlSeconds,
    record: () => ({
      id: workerId,
      pool,
      slots: config.slots,
      busy: runs.size,
      runs: runs.ids(),
      startedAt,
      host: hostname(),
      version: WORKER_VERSION,
    }),
    onDrain: (d) => drain(d.checkpointAndRelease),
    // A cancel or pause whose pub/sub message was missed (a reconnect) still lands within a
    // heartbeat, also in the middle of a step (the flags are otherwise read at step boundaries).
    afterBeat: async () => {
      for (const runId of runs.ids()) {
        const stop = await requestedStop(store, runId);
        if (stop) runs.get(runId)?.stop(stop);
      }
    },
    telemetry: events,
    logger,
  });
  const stopHeartbeat = cleanup.add('heartbeat', () => heartbeat.stop());
  const unsubscribeControl = await subscribeWorkerControl(subscriber, config.keyPrefix, {
    runs,
    workerId,
    drain,
    logger,
  });
  const unsubscribe = cleanup.add('control subscription', () =>
    unsubscribeControl().catch(() => undefined),
  );
  const server = await (options.startMetricsServer ?? startMetricsServer)(registry, {
    host: config.metrics.host,
    port: config.metrics.port,
    health: () => ({ id: workerId, pool, busy: runs.size, slots: config.slots, ...state }),
  });
  cleanup.add('metrics server', () => server.close());
  if (config.metrics.pushgatewayUrl !== null) {
    const pusher = startPushgateway(registry, {
      url: pushgatewayUrl(config.metrics.pushgatewayUrl, pool, workerId),
      intervalSeconds: config.metrics.pushIntervalSeconds,
      logger,
    });
    cleanup.add('pushgateway', () => pusher.close());
  }
  await heartbeat.beat(); // registered (and drain state known) before the first run
  onRunsChanged();
  void worker
    .run()
    .catch((err: unknown) => logger.error({ err: String(err) }, 'queue worker stopped'));
  logger.info(
    { slots: config.slots, metrics: server.url, local: config.configPath === null },
    'worker started',
  );

  const whenIdle = (ms: number) =>
    new Promise<boolean>((resolve) => {
      if (runs.size === 0) return resolve(true);
      const timer = setTimeout(() => resolve(false), ms);
      idleWaiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });

  let closing: Promise<void> | null = null;
  let closingStep: string | null = null;
  const shutdown = async () => {
    state.shuttingDown = true;
    closingStep = 'runs to reach a step boundary';
    const pausing = worker.pause(true).catch(() => undefined);
    runs.stopAll(shutdownStop);
    const idle = await whenIdle(config.shutdownGraceSeconds * 1000);
    if (!idle) {
      logger.warn(
        { runs: runs.ids() },
        'runs did not reach a step boundary within the grace period; their jobs go back to the queue when their locks expire',
      );
    }
    closingStep = 'the queue worker to pause';
    await pausing;
    closingStep = 'the queue worker to close';
    await closeWorker(!idle);
    closingStep = 'the heartbeat to stop';
    await stopHeartbeat();
    closingStep = 'the control channel to unsubscribe';
    await unsubscribe();
    closingStep = 'the worker record to be removed';
    await removeWorker(store, workerId, pool).catch(() => undefined);
    // The rest, newest first: pushgateway, metrics server, engines, metrics, Redis connections.
    closingStep = 'cleanup';
    await cleanup.unwind(logger);
    closingStep = null;
    logger.info('worker stopped');
  };

  return {
    id: workerId,
    pool,
    metricsUrl: server.url,
    events,
    runs: () => runs.ids(),
    async drain(checkpointAndRelease) {
      await requestDrain(store, workerId, checkpointAndRelease);
      drain(checkpointAndRelease);
    },
    close() {
      closing ??= shutdown();
      return closing;
    },
    closingStep: () =>
      closingStep === 'cleanup' ? `${cleanup.closing ?? 'nothing'} to close` : closingStep,
  };
}
