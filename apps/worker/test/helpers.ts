// Test support: real Redis (REDIS_URL), a unique store prefix per test, runs created and
// enqueued exactly as the control plane does, and polling with deadlines (never fixed sleeps).
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { type OperatorConfig, type RunSpec, parseRunSpec, resolveRunSpec } from '@anneal/protocol';
import {
  type StoreContext,
  createPoolQueues,
  createStoreContext,
  createRun,
  enqueueRun,
  type PoolQueues,
  deleteKeysWithPrefix,
} from '@anneal/store';
import { noopLogger } from '@anneal/telemetry';
import {
  type StartWorkerOptions,
  type WorkerConfigInput,
  type WorkerHandle,
  defineWorkerConfig,
  startWorker,
} from '../src/index.ts';
import { localWorkerOperatorConfig } from '../src/config.ts';
import { EXECUTORS } from './fixtures/executors.ts';
import { STUB_FACTORIES } from './fixtures/engines.ts';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

export interface TestEnv {
  prefix: string;
  pool: string;
  redis: Redis;
  store: StoreContext;
  queues: PoolQueues;
  artifactDir: string;
  operatorConfig: OperatorConfig;
  /** Creates a run (spec YAML, resolved against the operator config) and enqueues its job. */
  submit(yaml: string, options?: { enqueue?: boolean }): Promise<string>;
  startWorker(input?: WorkerConfigInput, options?: StartWorkerOptions): Promise<WorkerHandle>;
  connection(): Redis;
  cleanup(): Promise<void>;
}

export async function testEnv(operatorConfig?: OperatorConfig): Promise<TestEnv> {
  const prefix = `{anneal-worker-test-${randomUUID()}}`;
  const pool = 'default';
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const store = createStoreContext(redis, prefix);
  const queues = createPoolQueues(redis, prefix);
  const artifactDir = await mkdtemp(path.join(tmpdir(), 'anneal-worker-'));
  const config = operatorConfig ?? localWorkerOperatorConfig(pool, 1);
  const workers: WorkerHandle[] = [];
  const connections: Redis[] = [];
  return {
    prefix,
    pool,
    redis,
    store,
    queues,
    artifactDir,
    operatorConfig: config,
    async submit(yaml, options = {}) {
      const spec = resolveSpec(yaml, config);
      const created = await createRun(store, { tenant: 'default', spec });
      if (created.status !== 'created') throw new Error(`createRun: ${created.status}`);
      if (options.enqueue !== false) {
        await enqueueRun(queues.get(spec.pool), { id: created.run.id, priority: spec.priority });
      }
      return created.run.id;
    },
    async startWorker(input = {}, options = {}) {
      const handle = await startWorker(
        defineWorkerConfig({
          redisUrl: REDIS_URL,
          keyPrefix: prefix,
          pool,
          operatorConfig: config,
          artifactDir,
          heartbeatSeconds: 0.5,
          shutdownGraceSeconds: 10,
          metrics: { port: 0, host: '127.0.0.1', runSeriesGraceSeconds: 0 },
          ...input,
        }),
        // `executors: undefined` = the real executors (`./executors/index.ts`).
        { executors: EXECUTORS, factories: STUB_FACTORIES, logger: noopLogger, ...options },
      );
      workers.push(handle);
      return handle;
    },
    connection() {
      const c = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
      connections.push(c);
      return c;
    },
    async cleanup() {
      await Promise.all(workers.map((w) => w.close()));
      await queues.close();
      await Promise.all(connections.map((c) => c.quit().catch(() => c.disconnect())));
      await deleteKeysWithPrefix(redis, prefix);
      await redis.quit();
      await rm(artifactDir, { recursive: true, force: true });
    },
  };
}

export function resolveSpec(yaml: string, config: OperatorConfig): RunSpec & { pool: string } {
  const parsed = parseRunSpec(yaml);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  const resolved = resolveRunSpec(parsed.value, config);
  if (!resolved.ok) throw new Error(JSON.stringify(resolved.errors));
  return resolved.value;
}

export { eventually } from '@anneal/testing';

/** A small sft spec for the counting executor. */
export function sftSpec(
  options: {
    steps?: number;
    interval?: number;
    stepMs?: number;
    failAt?: number;
    trainedTokens?: number;
  } = {},
): string {
  const labels = [
    `step-ms: "${options.stepMs ?? 20}"`,
    ...(options.trainedTokens !== undefined ? [`trained-tokens: "${options.trainedTokens}"`] : []),
    ...(options.failAt !== undefined ? [`fail-at-step: "${options.failAt}"`] : []),
  ];
  return [
    'kind: sft',
    `steps: ${options.steps ?? 5}`,
    `checkpointInterval: ${options.interval ?? 2}`,
    'labels:',
    ...labels.map((l) => `  ${l}`),
  ].join('\n');
}
