// The worker's environment, parsed once at start-up with TypeBox and frozen. The only place in
// apps/worker that reads process.env (the caller passes it in; main.ts passes process.env).
import { readFileSync } from 'node:fs';
import { type Static, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { LOG_LEVELS } from '@anneal/telemetry';
import {
  RESOURCE_NAME_PATTERN,
  WORKER_ID_PATTERN,
  envValues,
  formatIssues,
  parseOperatorConfig,
  type OperatorConfig,
} from '@anneal/protocol';
import { isSentinelUrl, parseReplicaRequirement, sentinelOptions } from '@anneal/store';
import {
  MAX_HEAP_GROWING_PERCENT,
  type WorkerConfig,
  defineWorkerConfig,
  secretEnvNames,
} from './config.ts';
import { WorkerConfigError } from './errors.ts';

const Seconds = (description: string, minimum = 0) =>
  Type.Optional(Type.Number({ minimum, description }));
const Milliseconds = (description: string, minimum: number) =>
  Type.Optional(Type.Integer({ minimum, description }));

/** Every variable the worker reads. Values arrive as strings; numbers are converted. */
export const WorkerEnv = Type.Object({
  REDIS_URL: Type.String({
    // redis:// and rediss:// (TLS; user:password@ for ACL users), or Sentinel:
    // redis+sentinel://host:port,host:port/<primary> (packages/store/src/redis-url.ts).
    pattern: '^rediss?(\\+sentinel)?://',
    default: 'redis://127.0.0.1:6379',
  }),
  ANNEAL_KEY_PREFIX: Type.String({ pattern: '^\\{[^{}]+\\}', default: '{anneal}' }),
  ANNEAL_POOL: Type.String({ pattern: RESOURCE_NAME_PATTERN, default: 'default' }),
  ANNEAL_WORKER_ID: Type.Optional(Type.String({ pattern: WORKER_ID_PATTERN })),
  ANNEAL_SLOTS: Type.Optional(Type.Integer({ minimum: 1, maximum: 1024 })),
  ANNEAL_CONFIG: Type.Optional(Type.String({ minLength: 1 })),
  ANNEAL_ARTIFACT_DIR: Type.Optional(Type.String({ minLength: 1 })),
  ANNEAL_METRICS_PORT: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535 })),
  ANNEAL_METRICS_HOST: Type.Optional(Type.String({ minLength: 1 })),
  ANNEAL_PUSHGATEWAY_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
  ANNEAL_PUSH_INTERVAL_SECONDS: Seconds('Pushgateway push period.', 1),
  ANNEAL_RUN_SERIES_GRACE_SECONDS: Seconds('How long ended runs stay exported.'),
  ANNEAL_SHUTDOWN_GRACE_SECONDS: Seconds('SIGTERM grace period.'),
  ANNEAL_HEAP_GROWING_PERCENT: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: MAX_HEAP_GROWING_PERCENT,
      description: "Heap growth past a full collection's survivors, in percent; 0 = V8's own.",
    }),
  ),
  ANNEAL_HEARTBEAT_SECONDS: Seconds('Registry heartbeat period.', 0.1),
  ANNEAL_LOCK_DURATION_MS: Milliseconds('BullMQ job lock duration.', 500),
  ANNEAL_STALLED_INTERVAL_MS: Milliseconds('BullMQ stalled-job check period.', 200),
  ANNEAL_MAX_STALLED_COUNT: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: 1000,
      description:
        'Worker losses in a row, without a committed step or checkpoint, a run survives.',
    }),
  ),
  ANNEAL_REDIS_WAIT_REPLICAS: Type.Optional(
    Type.String({ description: "Replicas a write waits for: 'auto' (default) or a count." }),
  ),
  ANNEAL_REDIS_WAIT_TIMEOUT_MS: Milliseconds('WAIT timeout of one confirmation.', 1),
  ANNEAL_LOG_LEVEL: Type.Union(
    LOG_LEVELS.map((l) => Type.Literal(l)),
    { default: 'info' },
  ),
});
export type WorkerEnv = Static<typeof WorkerEnv>;

type Environment = Readonly<Record<string, string | undefined>>;

/** Validates the variables the worker knows; errors name the variable. */
export function parseWorkerEnv(env: Environment): WorkerEnv {
  const value = envValues(WorkerEnv, env);
  const first = Value.Errors(WorkerEnv, value).First();
  if (first) {
    const name = first.path.replace(/^\//, '') || '(environment)';
    throw new WorkerConfigError(name, `${first.message} (got ${JSON.stringify(env[name])})`);
  }
  const replicas = (value as WorkerEnv).ANNEAL_REDIS_WAIT_REPLICAS;
  if (replicas !== undefined) {
    try {
      parseReplicaRequirement(replicas);
    } catch (error) {
      throw new WorkerConfigError('ANNEAL_REDIS_WAIT_REPLICAS', (error as Error).message);
    }
  }
  const url = (value as WorkerEnv).REDIS_URL;
  if (isSentinelUrl(url)) {
    try {
      sentinelOptions(url); // a malformed Sentinel URL is named at start-up
    } catch (error) {
      throw new WorkerConfigError('REDIS_URL', (error as Error).message);
    }
  }
  return value as WorkerEnv;
}

function readOperatorConfig(file: string): OperatorConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new WorkerConfigError('ANNEAL_CONFIG', `cannot read ${file}: ${String(error)}`);
  }
  const parsed = parseOperatorConfig(text);
  if (!parsed.ok) {
    throw new WorkerConfigError(
      'ANNEAL_CONFIG',
      `${file} is invalid:\n${formatIssues(parsed.errors)}`,
    );
  }
  return parsed.value;
}

function readSecrets(config: OperatorConfig, env: Environment): Record<string, string> {
  const secrets: Record<string, string> = {};
  for (const name of secretEnvNames(config)) {
    const value = env[name];
    if (value === undefined || value === '') {
      throw new WorkerConfigError(
        name,
        'the operator config names it as an API key but it is unset',
      );
    }
    secrets[name] = value;
  }
  return secrets;
}

/** Env -> the frozen WorkerConfig (reads the operator config file when ANNEAL_CONFIG is set). */
export function loadWorkerConfig(env: Environment = process.env): Readonly<WorkerConfig> {
  const e = parseWorkerEnv(env);
  const operatorConfig = e.ANNEAL_CONFIG ? readOperatorConfig(e.ANNEAL_CONFIG) : undefined;
  return defineWorkerConfig({
    redisUrl: e.REDIS_URL,
    keyPrefix: e.ANNEAL_KEY_PREFIX,
    pool: e.ANNEAL_POOL,
    ...(e.ANNEAL_WORKER_ID !== undefined && { workerId: e.ANNEAL_WORKER_ID }),
    ...(e.ANNEAL_SLOTS !== undefined && { slots: e.ANNEAL_SLOTS }),
    ...(operatorConfig && { operatorConfig, configPath: e.ANNEAL_CONFIG ?? null }),
    ...(e.ANNEAL_ARTIFACT_DIR !== undefined && { artifactDir: e.ANNEAL_ARTIFACT_DIR }),
    metrics: {
      ...(e.ANNEAL_METRICS_PORT !== undefined && { port: e.ANNEAL_METRICS_PORT }),
      ...(e.ANNEAL_METRICS_HOST !== undefined && { host: e.ANNEAL_METRICS_HOST }),
      ...(e.ANNEAL_PUSHGATEWAY_URL !== undefined && { pushgatewayUrl: e.ANNEAL_PUSHGATEWAY_URL }),
      ...(e.ANNEAL_PUSH_INTERVAL_SECONDS !== undefined && {
        pushIntervalSeconds: e.ANNEAL_PUSH_INTERVAL_SECONDS,
      }),
      ...(e.ANNEAL_RUN_SERIES_GRACE_SECONDS !== undefined && {
        runSeriesGraceSeconds: e.ANNEAL_RUN_SERIES_GRACE_SECONDS,
      }),
    },
    ...(e.ANNEAL_SHUTDOWN_GRACE_SECONDS !== undefined && {
      shutdownGraceSeconds: e.ANNEAL_SHUTDOWN_GRACE_SECONDS,
    }),
    ...(e.ANNEAL_HEAP_GROWING_PERCENT !== undefined && {
      heapGrowingPercent: e.ANNEAL_HEAP_GROWING_PERCENT,
    }),
    ...(e.ANNEAL_HEARTBEAT_SECONDS !== undefined && {
      heartbeatSeconds: e.ANNEAL_HEARTBEAT_SECONDS,
    }),
    queue: {
      ...(e.ANNEAL_LOCK_DURATION_MS !== undefined && { lockDurationMs: e.ANNEAL_LOCK_DURATION_MS }),
      ...(e.ANNEAL_STALLED_INTERVAL_MS !== undefined && {
        stalledIntervalMs: e.ANNEAL_STALLED_INTERVAL_MS,
      }),
      ...(e.ANNEAL_MAX_STALLED_COUNT !== undefined && {
        maxStalledCount: e.ANNEAL_MAX_STALLED_COUNT,
      }),
    },
    replication: {
      ...(e.ANNEAL_REDIS_WAIT_REPLICAS !== undefined && {
        replicas: parseReplicaRequirement(e.ANNEAL_REDIS_WAIT_REPLICAS),
      }),
      ...(e.ANNEAL_REDIS_WAIT_TIMEOUT_MS !== undefined && {
        timeoutMs: e.ANNEAL_REDIS_WAIT_TIMEOUT_MS,
      }),
    },
    logLevel: e.ANNEAL_LOG_LEVEL,
    secrets: operatorConfig ? readSecrets(operatorConfig, env) : {},
  });
}
