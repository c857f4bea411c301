// Sentinel failover mid-run: one primary, one replica, three sentinels on loopback; the control
// plane (in-process) and a worker process running the real SFT executor connect through
// REDIS_URL=redis+sentinel://… (packages/store/src/redis-url.ts). The primary is killed -9 after
// a seeded step; the sentinels promote the replica; the run finishes with every step recorded
// once and nothing acknowledged before the failover lost. Figures: kill -> replica promoted
// (detect) and kill -> the run's next committed step (recover).
import { createHash, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localOperatorConfig } from '@anneal/protocol';
import {
  ControlPlaneEnvError,
  type RunningControlPlane,
  parseEnv,
  startControlPlane,
} from '@anneal/control-plane';
import {
  type StoreContext,
  createRedisClient,
  createStoreContext,
  getRun,
  getTransitions,
  readEvents,
  readSteps,
} from '@anneal/store';
import { createLogger } from '@anneal/telemetry';
import { WorkerConfigError, parseWorkerEnv } from '@anneal/worker';
import {
  type RealWorker,
  killHard,
  spawnRealWorker,
} from '../../worker/test/reliability/real-worker.ts';
import { recordResult } from '../../worker/test/reliability/results.ts';
import { pick, seededRandom } from '../../worker/test/reliability/seeded.ts';
import {
  type PrivateRedis,
  redisServerBinary,
  startPrivateRedis,
} from './reliability/private-redis.ts';
import { replicaInSync } from '../../../packages/store/test/replicas.ts';
import { type Sentinels, startSentinels } from './reliability/sentinel.ts';

// Read here only (the test's own switch).
const SEED = Number(process.env.ANNEAL_RELIABILITY_SEED ?? '20261201');
const STEPS = 16;

const token = `reliability-${randomUUID()}`;
const prefix = `{anneal-sentinel-${randomUUID()}}`;
let primary: PrivateRedis;
let replica: PrivateRedis;
let sentinels: Sentinels;
let plane: RunningControlPlane;
let worker: RealWorker;
let client: Redis;
let store: StoreContext;
let artifactDir: string;

async function eventually<T>(
  check: () => Promise<T>,
  timeoutMs: number,
  what: string,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) {
      throw new Error(`${what} not met within ${timeoutMs} ms\n--- worker\n${worker?.output()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const api = (p: string, init: RequestInit = {}) =>
  fetch(`${plane.url}${p}`, {
    ...init,
    headers: { authorization: `Bearer ${token}`, ...init.headers },
  });

beforeAll(async () => {
  const binary = redisServerBinary();
  if (!binary)
    throw new Error('redis-server is not on PATH (Debian: apt-get install redis-server)');
  primary = await startPrivateRedis(binary);
  replica = await startPrivateRedis(binary, ['--replicaof', '127.0.0.1', String(primary.port)]);
  sentinels = await startSentinels(binary, primary.port, primary.dir);
  // Ready when every sentinel knows the replica and the other two sentinels (quorum, election).
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
  // Sentinel counts the replica before its first sync (diskless, after a 5 s delay in Redis 7):
  // wait until it holds the primary's data, or an early kill promotes an empty replica.
  await eventually(() => replicaInSync(primary, replica), 60_000, 'replica in sync');
  artifactDir = await mkdtemp(path.join(tmpdir(), 'anneal-sentinel-'));
  plane = await startControlPlane({
    env: parseEnv({
      REDIS_URL: sentinels.url,
      ANNEAL_KEY_PREFIX: prefix,
      ANNEAL_HOST: '127.0.0.1',
      ANNEAL_PORT: '0',
    }),
    operator: {
      operator: localOperatorConfig(createHash('sha256').update(token).digest('hex')),
    },
    logger: createLogger({ name: 'control-plane', level: 'error' }),
  });
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
    },
  });
  client = createRedisClient(sentinels.url, { maxRetriesPerRequest: null });
  client.on('error', () => {}); // the failover is the point; commands wait for the new primary
  store = createStoreContext(client, prefix);
}, 90_000);

afterAll(async () => {
  if (worker) await killHard(worker);
  await plane?.close().catch(() => {});
  client?.disconnect();
  await sentinels?.stop();
  await replica?.stop();
  await primary?.stop();
  if (artifactDir) await rm(artifactDir, { recursive: true, force: true });
});

describe('REDIS_URL accepts Sentinel', () => {
  it('a malformed Sentinel URL is a configuration error naming REDIS_URL', () => {
    const bad = { REDIS_URL: 'redis+sentinel://u:secret@127.0.0.1/anneal-primary' };
    expect(() => parseEnv(bad)).toThrow(ControlPlaneEnvError);
    expect(() => parseEnv(bad)).toThrow(/REDIS_URL .*needs host:port/);
    expect(() => parseWorkerEnv(bad)).toThrow(WorkerConfigError);
    expect(() => parseWorkerEnv(bad)).toThrow(/REDIS_URL/);
    expect(() => parseWorkerEnv(bad)).not.toThrow(/secret/);
  });
});

describe('Sentinel failover mid-run', () => {
  it('the primary is killed; the run carries on on the promoted replica', async () => {
    const killAfter = pick(seededRandom(SEED + 7), 4, STEPS - 6);
    const created = await api('/v1/runs', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'sft', steps: STEPS, batchSize: 2, checkpointInterval: 4 }),
    });
    expect(created.status).toBe(201);
    const runId = ((await created.json()) as { id: string }).id;
    await eventually(
      async () => {
        const run = await getRun(store, runId);
        if (run?.state === 'succeeded') throw new Error('the run ended before the failover');
        return (run?.lastStep ?? 0) >= killAfter;
      },
      150_000,
      `step ${killAfter} committed`,
    );
    // What the primary acknowledged (and, asynchronously, replicated) before it dies.
    const stepsBefore = (await readSteps(store, runId)).map((s) => s.step);
    const eventsBefore = (await readEvents(store, runId, '0', 10_000)).map((e) => e.id);
    const killedAt = Date.now();
    await primary.kill();
    await eventually(
      async () => (await sentinels.primary()) === `127.0.0.1:${replica.port}`,
      60_000,
      'replica promoted',
    );
    const detectMs = Date.now() - killedAt;
    const stepAtKill = Math.max(0, ...stepsBefore);
    await eventually(
      async () => ((await getRun(store, runId))?.lastStep ?? 0) > stepAtKill,
      90_000,
      'a step committed after the failover',
    );
    const recoverMs = Date.now() - killedAt;
    await eventually(
      async () => {
        const run = await getRun(store, runId);
        if (run?.state === 'failed') throw new Error(`run failed: ${run.error}`);
        return run?.state === 'succeeded';
      },
      150_000,
      'run succeeded',
    ).catch(async (error: unknown) => {
      throw new Error(`${String(error)}\n${JSON.stringify(await getTransitions(store, runId))}`);
    });
    expect((await api(`/v1/runs/${runId}`)).status).toBe(200);

    const expected = Array.from({ length: STEPS }, (_, i) => i + 1);
    const steps = (await readSteps(store, runId)).map((s) => s.step);
    expect(steps).toEqual(expected);
    const events = await readEvents(store, runId, '0', 10_000);
    const committed = events
      .filter((e) => e.event.type === 'step:committed')
      .map((e) => (e.event as { step: number }).step);
    const eventIds = new Set(events.map((e) => e.id));
    const lost =
      stepsBefore.filter((s) => !steps.includes(s)).length +
      eventsBefore.filter((id) => !eventIds.has(id)).length +
      expected.filter((s) => !committed.includes(s)).length;
    const duplicated = committed.length - new Set(committed).size;
    expect({ lost, duplicated }).toEqual({ lost: 0, duplicated: 0 });
    const transitions = (await getTransitions(store, runId)).map((t) => t.to);

    await recordResult({
      scenario: 'redis sentinel failover',
      variant: 'primary kill -9',
      lost,
      duplicated,
      detectMs,
      recoverMs,
      detail:
        `sft ${STEPS} steps, primary killed after step ${stepAtKill} (seed ${SEED}); 1 replica, ` +
        `3 sentinels, quorum 2, down-after 1000 ms; transitions ${transitions.join(' > ')}`,
    });
  }, 400_000);
});
