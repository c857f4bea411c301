// Redis restarted mid-run (kill -9, then started again from its append-only file): the control
// plane (in-process) and a worker process running the real SFT executor carry on — the run
// finishes, every step committed before the crash is still there, no step is recorded twice —
// and the control plane answers 503 during the outage and 200 after it. The figure recorded is
// the time from Redis being back to the run's next committed step.
// Redis: a private `redis-server --appendonly yes --appendfsync always` (reliability/
// private-redis.ts), never the shared test Redis.
import { createHash, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { eventually as waitFor } from '@anneal/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localOperatorConfig } from '@anneal/protocol';
import { type RunningControlPlane, parseEnv, startControlPlane } from '@anneal/control-plane';
import {
  type StoreContext,
  createStoreContext,
  getRun,
  getTransitions,
  keys,
  readEvents,
  readSteps,
} from '@anneal/store';
import { createLogger } from '@anneal/telemetry';
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

// Read here only (the test's own switches).
const SEED = Number(process.env.ANNEAL_RELIABILITY_SEED ?? '20261201');
const STEPS = 16;
const OUTAGE_MS = 1_500;

const token = `reliability-${randomUUID()}`;
const prefix = `{anneal-redis-restart-${randomUUID()}}`;
let redisServer: PrivateRedis;
let plane: RunningControlPlane;
let worker: RealWorker;
let client: Redis;
let store: StoreContext;
let artifactDir: string;

const eventually = <T>(check: () => Promise<T>, timeoutMs: number, what: string) =>
  waitFor(() => check().catch(() => undefined), timeoutMs, what, {
    detail: () => `--- worker
${worker?.output()}`,
  });

const api = (p: string, init: RequestInit = {}) =>
  fetch(`${plane.url}${p}`, {
    ...init,
    headers: { authorization: `Bearer ${token}`, ...init.headers },
  });

beforeAll(async () => {
  const binary = redisServerBinary();
  if (!binary)
    throw new Error('redis-server is not on PATH (Debian: apt-get install redis-server)');
  redisServer = await startPrivateRedis(binary);
  artifactDir = await mkdtemp(path.join(tmpdir(), 'anneal-redis-restart-'));
  plane = await startControlPlane({
    env: parseEnv({
      REDIS_URL: redisServer.url,
      ANNEAL_KEY_PREFIX: prefix,
      ANNEAL_HOST: '127.0.0.1',
      ANNEAL_PORT: '0',
      ANNEAL_LOG_LEVEL: 'warn',
    }),
    operator: {
      operator: localOperatorConfig(createHash('sha256').update(token).digest('hex')),
    },
    logger: createLogger({ name: 'control-plane', level: 'error' }),
  });
  worker = spawnRealWorker({
    id: 'redis-restart-w',
    // Long enough that a step holding the worker's event loop on a loaded machine does not
    // make the control plane's sweep take a live worker for lost.
    heartbeatTtlSeconds: 10,
    env: {
      REDIS_URL: redisServer.url,
      ANNEAL_KEY_PREFIX: prefix,
      ANNEAL_ARTIFACT_DIR: artifactDir,
      ANNEAL_METRICS_PORT: '0',
      ANNEAL_METRICS_HOST: '127.0.0.1',
      ANNEAL_HEARTBEAT_SECONDS: '0.5',
      ANNEAL_LOCK_DURATION_MS: '8000',
      ANNEAL_STALLED_INTERVAL_MS: '1000',
    },
  });
  client = new Redis(redisServer.url, { maxRetriesPerRequest: null });
  client.on('error', () => {}); // the outage is the point; commands wait for the reconnect
  store = createStoreContext(client, prefix);
}, 60_000);

afterAll(async () => {
  if (worker) await killHard(worker);
  await plane?.close().catch(() => {});
  client?.disconnect();
  await redisServer?.stop();
  if (artifactDir) await rm(artifactDir, { recursive: true, force: true });
});

describe('Redis restarted mid-run from its AOF', () => {
  it('the run carries on: nothing committed is lost, nothing recorded twice', async () => {
    const killAfter = pick(seededRandom(SEED), 4, STEPS - 6);
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
        if (run?.state === 'succeeded') throw new Error('the run ended before the outage');
        return (run?.lastStep ?? 0) >= killAfter;
      },
      150_000,
      `step ${killAfter} committed`,
    );

    await redisServer.kill();
    // The steps and events acknowledged before the crash, read back from the AOF after it.
    const killedAt = Date.now();
    expect((await api(`/v1/runs/${runId}`)).status).toBe(503); // fails fast, does not hang
    await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
    await redisServer.start();
    const backAt = Date.now();
    const atRestart = await getRun(store, runId);
    const stepAtRestart = atRestart?.lastStep ?? 0;
    expect(stepAtRestart).toBeGreaterThanOrEqual(killAfter);
    const stepsBefore = (await readSteps(store, runId)).map((s) => s.step);
    const eventsBefore = (await readEvents(store, runId, '0', 10_000)).map((e) => e.id);

    await eventually(
      async () => ((await getRun(store, runId))?.lastStep ?? 0) > stepAtRestart,
      60_000,
      'a step committed after the restart',
    );
    const recoverMs = Date.now() - backAt;
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
    const stored = Object.keys(await client.hgetall(keys(prefix).steps(runId))).map(Number);
    const events = await readEvents(store, runId, '0', 10_000);
    const committed = events
      .filter((e) => e.event.type === 'step:committed')
      .map((e) => (e.event as { step: number }).step);
    const eventIds = new Set(events.map((e) => e.id));
    const lost =
      stepsBefore.filter((s) => !steps.includes(s)).length +
      eventsBefore.filter((id) => !eventIds.has(id)).length +
      expected.filter((s) => !committed.includes(s)).length;
    const duplicated =
      stored.length - new Set(stored).size + (committed.length - new Set(committed).size);
    expect({ lost, duplicated }).toEqual({ lost: 0, duplicated: 0 });
    const transitions = (await getTransitions(store, runId)).map((t) => t.to);

    await recordResult({
      scenario: 'redis restart (AOF)',
      variant: 'kill -9',
      lost,
      duplicated,
      detectMs: null,
      recoverMs,
      detail:
        `sft ${STEPS} steps, Redis killed after step ${stepAtRestart} (seed ${SEED}), down ` +
        `${backAt - killedAt} ms; appendfsync always; transitions ${transitions.join(' > ')}`,
    });
  }, 400_000);
});
