// The stack of the Sentinel failover tests: one primary, one replica and three sentinels on
// loopback (reliability/private-redis.ts, sentinel.ts), the control plane in-process and
// a worker process running the real SFT executor, both on
// REDIS_URL=redis+sentinel://…/anneal-primary with acknowledged writes waiting for the replica
// (ANNEAL_REDIS_WAIT_REPLICAS=auto, the default). Each test starts its own and stops it.
import { createHash, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { eventually as waitFor } from '@anneal/testing';
import { localOperatorConfig } from '@anneal/protocol';
import { type RunningControlPlane, parseEnv, startControlPlane } from '@anneal/control-plane';
import { type StoreContext, createRedisClient, createStoreContext } from '@anneal/store';
import { createLogger } from '@anneal/telemetry';
import {
  type RealWorker,
  killHard,
  spawnRealWorker,
} from '../../worker/test/reliability/real-worker.ts';
import {
  type PrivateRedis,
  redisServerBinary,
  startPrivateRedis,
} from './reliability/private-redis.ts';
import { replicaInSync } from '../../../packages/store/test/replicas.ts';
import { type Sentinels, startSentinels } from './reliability/sentinel.ts';

/** WAIT timeout of the stack's acknowledged writes: short, so that a write the lagging replica
 * cannot confirm is refused quickly (production default: 2000 ms). */
export const WAIT_TIMEOUT_MS = 500;

export interface FailoverStack {
  primary: PrivateRedis;
  replica: PrivateRedis;
  sentinels: Sentinels;
  plane: RunningControlPlane;
  /** Started by `startWorker` (tests may start it after a submission). */
  worker: RealWorker | null;
  startWorker(): RealWorker;
  /** Reads through Sentinel, like the stack (the current primary). */
  store: StoreContext;
  /** A connection to the first primary itself (not through Sentinel). */
  primaryClient(): Redis;
  token: string;
  api(path: string, init?: RequestInit): Promise<Response>;
  eventually<T>(check: () => Promise<T>, timeoutMs: number, what: string): Promise<NonNullable<T>>;
  stop(): Promise<void>;
}

export async function startFailoverStack(): Promise<FailoverStack> {
  const binary = redisServerBinary();
  if (!binary)
    throw new Error('redis-server is not on PATH (Debian: apt-get install redis-server)');
  const token = `reliability-${randomUUID()}`;
  const prefix = `{anneal-sentinel-${randomUUID()}}`;
  // A new replica syncs after repl-diskless-sync-delay (5 s by default): none here.
  const primary = await startPrivateRedis(binary, ['--repl-diskless-sync-delay', '0']);
  const replica = await startPrivateRedis(binary, [
    '--replicaof',
    '127.0.0.1',
    String(primary.port),
    '--repl-diskless-sync-delay',
    '0',
  ]);
  const sentinels = await startSentinels(binary, primary.port, primary.dir);
  const artifactDir = await mkdtemp(path.join(tmpdir(), 'anneal-sentinel-'));
  let worker: RealWorker | null = null;
  let plane: RunningControlPlane | undefined;
  const client = createRedisClient(sentinels.url, { maxRetriesPerRequest: null });
  client.on('error', () => {}); // the failover is the point; commands wait for the new primary
  const direct = new Redis(primary.url, { maxRetriesPerRequest: 0, lazyConnect: true });
  direct.on('error', () => {});

  const eventually = <T>(check: () => Promise<T>, timeoutMs: number, what: string) =>
    waitFor(() => check().catch(() => undefined), timeoutMs, what, {
      detail: () => `--- worker
${worker?.output()}`,
    });
  const stop = async () => {
    if (worker) await killHard(worker);
    await plane?.close().catch(() => {});
    client.disconnect();
    direct.disconnect();
    await sentinels.stop();
    await replica.stop();
    await primary.stop();
    await rm(artifactDir, { recursive: true, force: true });
  };

  try {
    // Ready when every sentinel knows the replica and the other two (quorum, election)…
    await eventually(
      async () => {
        for (const port of sentinels.ports) {
          const s = new Redis({ port, host: '127.0.0.1', lazyConnect: true });
          s.on('error', () => {});
          try {
            const [info] = (await s.call('SENTINEL', 'masters')) as string[][];
            const field = (name: string) => Number(info?.[info.indexOf(name) + 1] ?? 0);
            if (field('num-slaves') < 1 || field('num-other-sentinels') < 2) return false;
          } finally {
            s.disconnect();
          }
        }
        return true;
      },
      30_000,
      'sentinels see the replica and each other',
    );
    // … and the replica holds the primary's data: Sentinel counts a replica before its first
    // sync, so a kill before it would promote an empty one.
    await eventually(() => replicaInSync(primary, replica), 60_000, 'replica in sync');
    plane = await startControlPlane({
      env: parseEnv({
        REDIS_URL: sentinels.url,
        ANNEAL_KEY_PREFIX: prefix,
        ANNEAL_HOST: '127.0.0.1',
        ANNEAL_PORT: '0',
        ANNEAL_REDIS_WAIT_TIMEOUT_MS: String(WAIT_TIMEOUT_MS),
      }),
      operator: {
        operator: localOperatorConfig(createHash('sha256').update(token).digest('hex')),
      },
      // 5xx during the failover are expected (clients retry); only fatal errors are printed.
      logger: createLogger({ name: 'control-plane', level: 'fatal' }),
    });
  } catch (error) {
    await stop();
    throw error;
  }
  const running = plane;
  const stack: FailoverStack = {
    primary,
    replica,
    sentinels,
    plane: running,
    worker,
    startWorker() {
      worker = spawnRealWorker({
        id: 'sentinel-w',
        // Long enough that a step holding the worker's event loop on a loaded machine does not
        // make the control plane's sweep take a live worker for lost.
        heartbeatTtlSeconds: 10,
        env: {
          REDIS_URL: sentinels.url,
          ANNEAL_KEY_PREFIX: prefix,
          ANNEAL_ARTIFACT_DIR: artifactDir,
          ANNEAL_METRICS_PORT: '0',
          ANNEAL_METRICS_HOST: '127.0.0.1',
          ANNEAL_HEARTBEAT_SECONDS: '0.5',
          ANNEAL_LOCK_DURATION_MS: '8000',
          ANNEAL_STALLED_INTERVAL_MS: '1000',
          ANNEAL_REDIS_WAIT_TIMEOUT_MS: String(WAIT_TIMEOUT_MS),
        },
      });
      stack.worker = worker;
      return worker;
    },
    store: createStoreContext(client, prefix),
    primaryClient: () => direct,
    token,
    api: (p, init = {}) =>
      fetch(`${running.url}${p}`, {
        ...init,
        headers: { authorization: `Bearer ${token}`, ...init.headers },
      }),
    eventually,
    stop,
  };
  return stack;
}
