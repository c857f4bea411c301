// The demo's local stack, in-process as `anneal up` runs it: the control plane (REST API) and
// one worker with the embedded engines, on the local-mode operator config (one tenant, one
// operator token, embedded endpoints). `restart` brings both back with a changed operator
// config — how an operator registers a new reward model — while every run stays in Redis.
import { createHash } from 'node:crypto';
import { createWriteStream, type WriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { type OperatorConfig, localOperatorConfig, validateOperatorConfig } from '@anneal/protocol';
import { createLogger } from '@anneal/telemetry';

export interface StackOptions {
  redisUrl: string;
  /** Redis key prefix (a `{hash-tag}`), unique per demo run. */
  keyPrefix: string;
  token: string;
  /** The artifact root, the worker's and the control plane's: checkpoints and exports of the
   * embedded trainer, rollouts, eval items (kept across restarts). */
  artifactDir: string;
  /** JSON-lines log file of the control plane and the worker. */
  logFile: string;
  /** Seconds a finished run's series stay on the worker's /metrics (telemetry grace). */
  runSeriesGraceSeconds: number;
}

export interface RewardModelEntry {
  name: string;
  /** The rm run whose final checkpoint is the model (operator config `type: run`). */
  run: string;
}

export interface RunningStack {
  /** Control plane base URL, e.g. http://127.0.0.1:41234 */
  url: string;
  /** The worker's Prometheus endpoint. */
  metricsUrl: string;
  workerId: string;
  /** Registered reward models (operator config `rewardModels`). */
  rewardModels: readonly RewardModelEntry[];
  close(): Promise<void>;
}

function logStream(file: string): Promise<WriteStream> {
  return new Promise((resolve, reject) => {
    const stream = createWriteStream(file, { flags: 'a' });
    stream.once('open', () => resolve(stream));
    stream.once('error', reject);
  });
}

/** The local-mode operator config plus reward models registered as `type: run`. */
function operatorConfig(token: string, rewardModels: readonly RewardModelEntry[]): OperatorConfig {
  const local = localOperatorConfig(createHash('sha256').update(token).digest('hex'));
  const registered = Object.fromEntries(
    rewardModels.map((m) => [m.name, { type: 'run' as const, run: m.run }]),
  );
  const parsed = validateOperatorConfig({
    ...local,
    rewardModels: { ...local.rewardModels, ...registered },
  });
  if (!parsed.ok) throw new Error(`demo operator config: ${JSON.stringify(parsed.errors)}`);
  return parsed.value;
}

export async function startStack(
  options: StackOptions,
  rewardModels: readonly RewardModelEntry[] = [],
): Promise<RunningStack> {
  // Loaded here, like `anneal up`: other commands do not pay for Fastify, BullMQ and the engines.
  const { parseEnv, startControlPlane } = await import('@anneal/control-plane');
  const { defineWorkerConfig, startWorker } = await import('@anneal/worker');
  await mkdir(path.dirname(options.logFile), { recursive: true });
  await mkdir(options.artifactDir, { recursive: true });
  const logs = await logStream(options.logFile);
  const operator = operatorConfig(options.token, rewardModels);
  const env = parseEnv({
    REDIS_URL: options.redisUrl,
    ANNEAL_KEY_PREFIX: options.keyPrefix,
    ANNEAL_HOST: '127.0.0.1',
    ANNEAL_PORT: '0',
    ANNEAL_LOG_LEVEL: 'info',
    ANNEAL_ARTIFACT_DIR: options.artifactDir,
  });
  const plane = await startControlPlane({
    env,
    operator: { operator },
    logger: createLogger({ name: 'control-plane', level: 'info', destination: logs }),
  }).catch((error: unknown) => {
    logs.end();
    throw error;
  });
  const config = defineWorkerConfig({
    redisUrl: options.redisUrl,
    keyPrefix: options.keyPrefix,
    pool: 'default',
    workerId: `demo-${process.pid}-${Date.now().toString(36)}`,
    operatorConfig: operator,
    artifactDir: options.artifactDir,
    metrics: {
      port: 0,
      host: '127.0.0.1',
      runSeriesGraceSeconds: options.runSeriesGraceSeconds,
    },
    shutdownGraceSeconds: 30,
    logLevel: 'info',
  });
  let worker;
  try {
    worker = await startWorker(config, {
      logger: createLogger({ name: 'worker', level: 'info', destination: logs }),
    });
  } catch (error) {
    await plane.close();
    logs.end();
    throw error;
  }
  const started = worker;
  return {
    url: plane.url,
    metricsUrl: started.metricsUrl,
    workerId: started.id,
    rewardModels,
    async close() {
      try {
        await started.close();
      } finally {
        await plane.close();
        await new Promise<void>((resolve) => logs.end(resolve));
      }
    },
  };
}
