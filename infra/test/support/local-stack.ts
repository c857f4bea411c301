// A real Anneal stack in this process, for infra tests: the control plane (startControlPlane)
// and, optionally, one worker with the embedded engines (startWorker), both on the real Redis
// under a unique key prefix, configured by an operator config file like a deployment. Cleaned up
// (servers closed, keys deleted, temp files removed) by `close`.
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { type RunningControlPlane, parseEnv, startControlPlane } from '@anneal/control-plane';
import { type WorkerHandle, loadWorkerConfig, startWorker } from '@anneal/worker';
import { stringify } from 'yaml';
import { deleteKeysWithPrefix } from '@anneal/store';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

export interface LocalStackOptions {
  /** Pools of the operator config, name -> slots per worker. The worker serves the first. */
  pools: Record<string, number>;
  /** Start one worker (embedded engines) in the first pool. */
  worker?: boolean;
  /** ANNEAL_RUN_SERIES_GRACE_SECONDS of the worker. */
  runSeriesGraceSeconds?: number;
}

export interface LocalStack {
  url: string;
  token: string;
  prefix: string;
  plane: RunningControlPlane;
  worker: WorkerHandle | undefined;
  /** A JSON request with the operator token; throws on a non-2xx answer unless `allowError`. */
  api<T>(method: string, route: string, body?: unknown, allowError?: boolean): Promise<T>;
  /** Submits a YAML spec, returns the run id. */
  submit(yaml: string): Promise<string>;
  /** Polls the run until it succeeded; throws (with the run's error) if it failed. */
  waitForSuccess(runId: string, timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

function operatorConfigYaml(pools: Record<string, number>, tokenSha256: string): string {
  return stringify({
    pools: Object.fromEntries(Object.entries(pools).map(([name, slots]) => [name, { slots }])),
    inference: { embedded: { type: 'embedded' } },
    trainers: {
      embedded: {
        type: 'embedded',
        capabilities: {
          kinds: ['sft', 'rm', 'grpo', 'eval'],
          losses: ['cross_entropy', 'importance_sampling', 'ppo', 'bradley_terry'],
          reduction: 'sum',
        },
      },
    },
    search: { local: { type: 'local' } },
    baseModels: { tiny: { model: 'embedded:tiny' } },
    defaults: {
      pool: Object.keys(pools)[0],
      inference: 'embedded',
      trainer: 'embedded',
      search: 'local',
      baseModel: 'tiny',
    },
    tenants: { default: { maxConcurrentRuns: 4 } },
    tokens: [{ name: 'ops', sha256: tokenSha256, role: 'operator', tenant: 'default' }],
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function startLocalStack(options: LocalStackOptions): Promise<LocalStack> {
  const prefix = `{anneal-infra-${randomUUID()}}`;
  const token = `infra-${randomUUID()}`;
  const dir = mkdtempSync(path.join(tmpdir(), 'anneal-stack-'));
  const configPath = path.join(dir, 'operator-config.yaml');
  writeFileSync(
    configPath,
    operatorConfigYaml(options.pools, createHash('sha256').update(token).digest('hex')),
  );
  const common = {
    REDIS_URL,
    ANNEAL_KEY_PREFIX: prefix,
    ANNEAL_CONFIG: configPath,
    ANNEAL_LOG_LEVEL: 'error',
  };
  const plane = await startControlPlane({
    env: parseEnv({ ...common, ANNEAL_HOST: '127.0.0.1', ANNEAL_PORT: '0' }),
  });
  let worker: WorkerHandle | undefined;
  try {
    if (options.worker) {
      const config = loadWorkerConfig({
        ...common,
        ANNEAL_POOL: Object.keys(options.pools)[0],
        ANNEAL_WORKER_ID: `infra-worker-${randomUUID().slice(0, 8)}`,
        ANNEAL_ARTIFACT_DIR: path.join(dir, 'artifacts'),
        ANNEAL_METRICS_HOST: '127.0.0.1',
        ANNEAL_METRICS_PORT: '0',
        ANNEAL_HEARTBEAT_SECONDS: '1',
        ...(options.runSeriesGraceSeconds !== undefined && {
          ANNEAL_RUN_SERIES_GRACE_SECONDS: String(options.runSeriesGraceSeconds),
        }),
      });
      worker = await startWorker(config);
    }
  } catch (error) {
    await plane.close();
    throw error;
  }

  const api = async <T>(method: string, route: string, body?: unknown, allowError = false) => {
    const response = await fetch(new URL(route, plane.url), {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined && {
          'content-type': typeof body === 'string' ? 'application/yaml' : 'application/json',
        }),
      },
      ...(body !== undefined && {
        body: typeof body === 'string' ? body : JSON.stringify(body),
      }),
    });
    const text = await response.text();
    if (!response.ok && !allowError)
      throw new Error(`${method} ${route}: ${response.status} ${text}`);
    return (text ? JSON.parse(text) : undefined) as T;
  };

  return {
    url: plane.url,
    token,
    prefix,
    plane,
    worker,
    api,
    submit: async (yaml) => (await api<{ id: string }>('POST', '/v1/runs', yaml)).id,
    async waitForSuccess(runId, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const run = await api<{ state: string; error?: string }>('GET', `/v1/runs/${runId}`);
        if (run.state === 'succeeded') return;
        if (run.state === 'failed' || run.state === 'cancelled') {
          throw new Error(`run ${runId} ${run.state}: ${run.error ?? ''}`);
        }
        if (Date.now() > deadline) {
          throw new Error(`run ${runId} still ${run.state} after ${timeoutMs} ms`);
        }
        await sleep(250);
      }
    },
    async close() {
      await worker?.close();
      await plane.close();
      const redis = new Redis(REDIS_URL);
      await deleteKeysWithPrefix(redis, prefix);
      await redis.quit();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
