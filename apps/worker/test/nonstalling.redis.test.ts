// Heavy compute never runs on the event loop: a run whose one step is 60 s of CPU-heavy work in a
// worker thread keeps its BullMQ job lock renewed (never stalled) and its heartbeats on time.
import { Worker as Thread } from 'node:worker_threads';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { QueueEvents } from 'bullmq';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { poolQueueName } from '@anneal/protocol';
import { bullPrefix, getRun, getTransitions } from '@anneal/store';
import type { Executor } from '../src/index.ts';
import { type TestEnv, eventually, sftSpec, testEnv } from './helpers.ts';

const HEAVY_STEP_MS = 60_000;
const HEARTBEAT_SECONDS = 2;
const LOCK_DURATION_MS = 4_000; // BullMQ renews at half of it

// Busy loop for `ms` in a worker thread (what the embedded trainer/sampler do with real math).
const BUSY_THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
const start = performance.now();
let x = 0, iterations = 0;
while (performance.now() - start < workerData.ms) {
  for (let i = 1; i < 100000; i++) x += Math.sqrt(i) * Math.sin(i);
  iterations++;
}
parentPort.postMessage({ elapsedMs: performance.now() - start, iterations, x });
`;

interface Heavy {
  startedAt: number;
  endedAt: number;
  elapsedMs: number;
  iterations: number;
}
const heavy: Heavy[] = [];

const heavyExecutor: Executor = async (ctx) => {
  const startedAt = Date.now();
  const result = await new Promise<{ elapsedMs: number; iterations: number }>((resolve, reject) => {
    const thread = new Thread(BUSY_THREAD, { eval: true, workerData: { ms: HEAVY_STEP_MS } });
    thread.once('message', resolve);
    thread.once('error', reject);
  });
  heavy.push({ startedAt, endedAt: Date.now(), ...result });
  await ctx.commitStep(1, { loss: 0.1, 'phase_seconds/train': result.elapsedMs / 1000 });
  return { summary: {}, finalCheckpoint: null, stopped: false };
};

let env: TestEnv;
let queueEvents: QueueEvents | undefined;
beforeEach(async () => {
  env = await testEnv();
});
afterEach(async () => {
  await queueEvents?.close();
  await env.cleanup();
});

it('a 60 s CPU-heavy step neither stalls the job nor delays heartbeats', async () => {
  const queueName = poolQueueName(env.pool);
  queueEvents = new QueueEvents(queueName, {
    connection: env.connection(),
    prefix: bullPrefix(env.prefix),
  });
  await queueEvents.waitUntilReady();
  const stalled: string[] = [];
  queueEvents.on('stalled', ({ jobId }) => stalled.push(jobId));

  const worker = await env.startWorker(
    {
      heartbeatSeconds: HEARTBEAT_SECONDS,
      queue: { lockDurationMs: LOCK_DURATION_MS, stalledIntervalMs: 1_000 },
    },
    { executors: { sft: heavyExecutor } },
  );
  const beats: number[] = [];
  worker.events.on('worker:heartbeat', ({ atMs }) => beats.push(atMs));
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();

  const runId = await env.submit(sftSpec({ steps: 1 }));
  const lockKey = `${bullPrefix(env.prefix)}:${queueName}:${runId}:lock`;
  const probe = env.connection();
  const ttls: number[] = [];
  await eventually(
    async () => {
      ttls.push(await probe.pttl(lockKey));
      return (await getRun(env.store, runId))?.state === 'succeeded';
    },
    HEAVY_STEP_MS + 30_000,
    'run succeeded',
  );
  loopDelay.disable();

  const [step] = heavy;
  expect(step?.elapsedMs).toBeGreaterThanOrEqual(HEAVY_STEP_MS);
  expect(step?.iterations).toBeGreaterThan(0);
  // The lock: present the whole time (PTTL > 0 while active) and renewed again and again.
  const whileActive = ttls.slice(1, -2);
  const renewals = whileActive.filter((ttl, i) => i > 0 && ttl > (whileActive[i - 1] ?? 0)).length;
  expect(Math.min(...whileActive)).toBeGreaterThan(LOCK_DURATION_MS / 4); // always fresh
  expect(renewals).toBeGreaterThanOrEqual(Math.floor(HEAVY_STEP_MS / (LOCK_DURATION_MS / 2)) * 0.6);
  // Not stalled: no stalled event, stalledCounter 0, never retried.
  expect(stalled).toEqual([]);
  expect((await env.queues.get(env.pool).getJob(runId))?.stalledCounter ?? 0).toBe(0);
  expect((await getTransitions(env.store, runId)).map((t) => t.to)).toEqual([
    'queued',
    'running',
    'succeeded',
  ]);
  // Heartbeats kept their period while the thread was busy.
  const during = beats.filter((t) => step && t >= step.startedAt && t <= step.endedAt);
  const gaps = during.slice(1).map((t, i) => t - (during[i] ?? t));
  expect(during.length).toBeGreaterThanOrEqual(
    Math.floor(HEAVY_STEP_MS / (HEARTBEAT_SECONDS * 1000)) - 2,
  );
  expect(Math.max(...gaps)).toBeLessThanOrEqual(HEARTBEAT_SECONDS * 1000 * 1.5);
  console.log(
    `nonstalling: step ${Math.round(step?.elapsedMs ?? 0)} ms in a thread; ${renewals} lock renewals, ` +
      `min PTTL ${Math.min(...whileActive)} ms; ${during.length} heartbeats, max gap ${Math.max(...gaps)} ms ` +
      `(interval ${HEARTBEAT_SECONDS * 1000}); event-loop delay max ${(loopDelay.max / 1e6).toFixed(1)} ms`,
  );
}, 150_000);
