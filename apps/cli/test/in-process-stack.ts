// A control plane and a worker in this process on one Redis key prefix, for REST-level tests
// against engine fakes: started from a parsed operator config, torn down with its keys, its
// engines and its directory. Plus the bearer-token REST calls those tests make.
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { Redis } from 'ioredis';
import { parseEnv, startControlPlane, type RunningControlPlane } from '@anneal/control-plane';
import { type OperatorConfig, isTerminal, type RunState } from '@anneal/protocol';
import { deleteKeysWithPrefix } from '@anneal/store';
import { createLogger } from '@anneal/telemetry';
import {
  type EngineFactories,
  defineWorkerConfig,
  startWorker,
  type WorkerHandle,
} from '@anneal/worker';
import { REDIS_URL } from './cli-process.ts';

const silent = () => createLogger({ name: 'test', level: 'silent' });

export interface InProcessStack {
  plane: RunningControlPlane;
  worker: WorkerHandle;
  prefix: string;
  /** Stops the worker, the plane and `engines`, deletes the prefix's keys and `dir`. */
  close(): Promise<void>;
}

export async function startInProcessStack(options: {
  operator: OperatorConfig;
  /** Names the key prefix and the worker. */
  name: string;
  /** Scratch directory of the test (the worker's artifacts go under it); removed on close. */
  dir: string;
  /** Engine fakes the test started; closed after the worker and the plane. */
  engines: ReadonlyArray<{ close(): Promise<void> }>;
  /** Engine factories of the worker replacing the defaults (e.g. a recording sampler). */
  factories?: Partial<EngineFactories>;
}): Promise<InProcessStack> {
  const { operator, name, dir, engines } = options;
  // One artifact root, written by the worker and read by the plane (checkpoint export).
  const artifactDir = path.join(dir, 'worker');
  const prefix = `{anneal-${name}-${randomUUID()}}`;
  const plane = await startControlPlane({
    env: parseEnv({
      REDIS_URL,
      ANNEAL_KEY_PREFIX: prefix,
      ANNEAL_HOST: '127.0.0.1',
      ANNEAL_PORT: '0',
      ANNEAL_ARTIFACT_DIR: artifactDir,
    }),
    operator: { operator },
    logger: silent(),
  });
  const worker = await startWorker(
    defineWorkerConfig({
      redisUrl: REDIS_URL,
      keyPrefix: prefix,
      pool: 'default',
      workerId: name,
      operatorConfig: operator,
      artifactDir,
      metrics: { port: 0, host: '127.0.0.1' },
    }),
    { logger: silent(), ...(options.factories && { factories: options.factories }) },
  );
  return {
    plane,
    worker,
    prefix,
    close: async () => {
      await worker.close();
      await plane.close();
      await Promise.all(engines.map((engine) => engine.close()));
      const redis = new Redis(REDIS_URL);
      await deleteKeysWithPrefix(redis, prefix);
      await redis.quit();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export interface RestReply<T> {
  status: number;
  type: string | null;
  body: T;
}

/** REST calls with `token`; a body is sent as a YAML run spec. */
export function restClient(plane: RunningControlPlane, token: string) {
  const api = async <T>(method: string, url: string, body?: string): Promise<RestReply<T>> => {
    const res = await fetch(`${plane.url}${url}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined && { 'content-type': 'application/yaml' }),
      },
      ...(body !== undefined && { body }),
    });
    return {
      status: res.status,
      type: res.headers.get('content-type'),
      body: (await res.json()) as T,
    };
  };
  /** The run once it is in a terminal state. */
  const finished = async (id: string, timeoutMs = 90_000) => {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const { body } = await api<{ state: RunState; error?: string }>('GET', `/v1/runs/${id}`);
      if (isTerminal(body.state)) return body;
      if (Date.now() > until) throw new Error(`run ${id} still ${body.state}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  };
  return { api, finished };
}
