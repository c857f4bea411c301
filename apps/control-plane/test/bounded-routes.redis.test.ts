// Every read route answers in bounded bytes, time and memory however long a run lives: a GRPO
// run of STEPS steps is written through the store as a worker writes it (started, each step
// committed with a GRPO-sized record and checkpointed, retention retiring all but the newest 3,
// metered usage), then each read route is called over real HTTP — alone, then ten at once —
// while /healthz is polled throughout. `npm test` builds 5,000 steps; ANNEAL_SOAK=1
// (`npm run soak`) builds 100,000. The figures go to docs/reliability.md "Bounded responses".
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunResource } from '@anneal/protocol';
import {
  EVENTS_MAX_LEN,
  appendStep,
  finishRun,
  heartbeatWorker,
  keys,
  retireCheckpoint,
  setCheckpoint,
  startRun,
} from '@anneal/store';
import { TOKENS, type TestPlane, submit, testPlane } from './helpers.ts';

// Read here only (the test's own switches; ANNEAL_SOAK_STEPS: another soak length).
const SOAK = process.env.ANNEAL_SOAK === '1';
const STEPS = SOAK ? Number(process.env.ANNEAL_SOAK_STEPS ?? 100_000) : 5_000;
/** Retention: the newest KEEP checkpoints are kept, the rest retired as the run goes. */
const KEEP = 3;
/** Steps written per batch of pipelined store calls while the run is built. */
const WINDOW = 250;

/** A GRPO step record's metrics (names as apps/worker/src/executors/metrics.ts writes them). */
function grpoMetrics(step: number): Record<string, number> {
  const metrics: Record<string, number> = {
    loss: 1 / step,
    grad_norm: 1 + (step % 7) / 10,
    'reward/all': (step % 100) / 100,
    train_inference_kl: step * 1e-9,
    'phase/sample': 1.5,
    'phase/train': 0.7,
    'phase/checkpoint': 0.1,
  };
  for (let i = 0; i < 30; i++) metrics[`reward/part_${i}`] = ((step * (i + 1)) % 97) / 97;
  return metrics;
}

let plane: TestPlane;
let base = '';
let runId = '';
let redisBytesPerStep = 0;
let redisRunBytes = 0;
let buildMs = 0;

async function buildRun(): Promise<void> {
  const res = await submit(plane.app, `kind: grpo\nsteps: ${STEPS}\nname: long-run`);
  expect(res.statusCode, res.body).toBe(201);
  runId = res.json<RunResource>().id;
  // A worker's heartbeat, kept up as the run goes (a lapsed one is a lost worker: its run would
  // be retried under a new attempt and these writes fenced).
  const beat = () =>
    heartbeatWorker(
      plane.store,
      {
        id: 'w-long',
        pool: 'default',
        slots: 1,
        busy: 1,
        runs: [runId],
        startedAt: new Date().toISOString(),
      },
      3600,
    );
  await beat();
  const started = await startRun(plane.store, runId, 'w-long');
  if (started.status !== 'started') throw new Error(`start: ${started.status}`);
  const fence = { attempt: started.attempt };
  // One step as a worker writes it: commit, checkpoint, retire the one retention lets go.
  const writeStep = (step: number): Array<() => Promise<void>> => [
    () =>
      appendStep(plane.store, runId, step, grpoMetrics(step), fence).then((r) => {
        if (r.status !== 'committed') throw new Error(`step ${step}: ${r.status}`);
      }),
    () =>
      setCheckpoint(
        plane.store,
        runId,
        {
          step,
          path: `tinker://long/weights/step-${step}`,
          samplerPath: `tinker://long/sampler_weights/step-${step}`,
        },
        fence,
      ).then((r) => {
        if (r !== 'saved') throw new Error(`checkpoint ${step}: ${r}`);
      }),
    ...(step > KEEP
      ? [
          () =>
            retireCheckpoint(plane.store, runId, step - KEEP, fence).then((r) => {
              if (r.status !== 'retired') throw new Error(`retire ${step - KEEP}: ${r.status}`);
            }),
        ]
      : []),
  ];
  // The first steps one write at a time (each script is then loaded on Redis), the rest WINDOW
  // steps at a time: the same store calls in the same order on one connection, sent without
  // waiting for each reply (Redis runs them in the order sent, so what is stored is what the
  // sequential writes store). A round trip each took ~11 ms on a loaded 2-core machine (the
  // scheduler, not Redis); pipelined, ~2 ms a step.
  const built = performance.now();
  for (let step = 1; step <= KEEP + 1; step++) {
    for (const write of writeStep(step)) await write();
  }
  for (let from = KEEP + 2; from <= STEPS; from += WINDOW) {
    await beat();
    const writes: Array<Promise<void>> = [];
    for (let step = from; step < Math.min(from + WINDOW, STEPS + 1); step++) {
      writes.push(...writeStep(step).map((write) => write()));
    }
    await Promise.all(writes);
  }
  buildMs = performance.now() - built;
  await finishRun(plane.store, runId, { state: 'succeeded', reason: 'done' }, 'w-long');
}

/** Bytes Redis holds for the run's keys (MEMORY USAGE, all samples). */
async function runKeyBytes(): Promise<number> {
  const found = await plane.redis.keys(`${keys(plane.prefix).run(runId)}*`);
  let total = 0;
  for (const key of found) {
    total += Number((await plane.redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0')) ?? 0);
  }
  return total;
}

interface Reading {
  bytes: number;
  ms: number;
  /** CPU time of this process (the control plane and the test's client) during the read. */
  cpuMs: number;
}

async function read(path: string): Promise<Reading> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const res = await fetch(`${base}${path}`, {
    headers: { authorization: `Bearer ${TOKENS.acmeViewer}` },
  });
  if (res.status !== 200)
    expect(res.status, `${path}: ${(await res.text()).slice(0, 300)}`).toBe(200);
  // Counted as it arrives, not held: the test process is the control plane too, and ten held
  // copies of the largest answer would be the client's memory, not the server's.
  let bytes = 0;
  for await (const chunk of res.body!) bytes += (chunk as Uint8Array).byteLength;
  const used = process.cpuUsage(cpu);
  return {
    bytes,
    ms: performance.now() - started,
    cpuMs: (used.user + used.system) / 1000,
  };
}

/** Polls /healthz until stopped; the slowest answer is what every tenant waited at worst. */
function pollHealth() {
  let worst = 0;
  /** The worst since the last `mark()`. */
  let sinceMark = 0;
  let polls = 0;
  let stop = false;
  const done = (async () => {
    while (!stop) {
      const started = performance.now();
      const res = await fetch(`${base}/healthz`);
      await res.arrayBuffer();
      expect(res.status).toBe(200);
      worst = Math.max(worst, performance.now() - started);
      sinceMark = Math.max(sinceMark, performance.now() - started);
      polls++;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  return {
    mark() {
      const w = sinceMark;
      sinceMark = 0;
      return w;
    },
    async stop() {
      stop = true;
      await done;
      return { worstMs: worst, polls };
    },
  };
}

beforeAll(async () => {
  plane = await testPlane();
  base = await plane.app.listen({ host: '127.0.0.1', port: 0 });
  const before = Number(
    (await plane.redis.info('memory')).match(/used_memory:(\d+)/)?.[1] ?? Number.NaN,
  );
  await buildRun();
  redisRunBytes = await runKeyBytes();
  const after = Number(
    (await plane.redis.info('memory')).match(/used_memory:(\d+)/)?.[1] ?? Number.NaN,
  );
  redisBytesPerStep = redisRunBytes / STEPS;
  console.log(
    `[bounded-routes] ${STEPS} steps built in ${(buildMs / 1000).toFixed(0)} s: run keys ${(redisRunBytes / 2 ** 20).toFixed(1)} MiB ` +
      `(${redisBytesPerStep.toFixed(0)} B/step); used_memory +${((after - before) / 2 ** 20).toFixed(1)} MiB`,
  );
}, 3_600_000);

afterAll(async () => {
  await plane?.cleanup();
});

/** Each route at its largest page: the bytes and the CPU one answer may take, whatever the
 * run's length (the page limits bound both). */
const routes = (id: string): Array<{ path: string; maxBytes: number; maxCpuMs: number }> => [
  { path: `/v1/runs/${id}`, maxBytes: 64 * 1024, maxCpuMs: 250 },
  { path: `/v1/runs/${id}/checkpoints`, maxBytes: 256 * 1024, maxCpuMs: 250 },
  {
    path: `/v1/runs/${id}/checkpoints?status=deleted&limit=200`,
    maxBytes: 1024 * 1024,
    maxCpuMs: 500,
  },
  {
    path: `/v1/runs/${id}/checkpoints?status=all&order=desc&limit=200`,
    maxBytes: 1024 * 1024,
    maxCpuMs: 500,
  },
  { path: `/v1/runs/${id}/metrics`, maxBytes: 1000 * 2048, maxCpuMs: 500 },
  // the largest page: 10,000 steps of a few named metrics
  {
    path: `/v1/runs/${id}/metrics?limit=10000&names=loss,reward/all`,
    maxBytes: 10_000 * 160,
    maxCpuMs: 2_000,
  },
  { path: `/v1/runs/${id}/usage`, maxBytes: 64 * 1024, maxCpuMs: 250 },
  { path: `/v1/runs/${id}/rollouts?limit=200`, maxBytes: 1024 * 1024, maxCpuMs: 500 },
  { path: '/v1/runs?limit=200', maxBytes: 1024 * 1024, maxCpuMs: 500 },
  { path: '/v1/workers', maxBytes: 256 * 1024, maxCpuMs: 250 },
  { path: '/v1/pools', maxBytes: 64 * 1024, maxCpuMs: 250 },
  // The event replay of a finished run streams the whole capped stream (EVENTS_MAX_LEN events,
  // read 1,000 at a time with backpressure): bounded by the cap, not the run's length.
  { path: `/v1/runs/${id}/events`, maxBytes: EVENTS_MAX_LEN * 2048, maxCpuMs: 60_000 },
];

describe(`a run of ${STEPS.toLocaleString('en')} steps`, () => {
  it('answers every read route in bounded bytes and time, /healthz unaffected', async () => {
    const health = pollHealth();
    const rssBefore = process.memoryUsage().rss;
    let rssPeak = rssBefore;
    const sampler = setInterval(() => {
      rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
    }, 10);
    const worst = new Map<string, Reading>();
    const note = (path: string, r: Reading) => {
      const w = worst.get(path);
      worst.set(path, {
        bytes: Math.max(w?.bytes ?? 0, r.bytes),
        ms: Math.max(w?.ms ?? 0, r.ms),
        cpuMs: Math.max(w?.cpuMs ?? 0, r.cpuMs),
      });
    };
    /** CPU of one read alone (the concurrent ones share the process's CPU time). */
    const alone = new Map<string, number>();
    /** /healthz at worst while ten read each route at once. */
    const healthDuring = new Map<string, number>();
    try {
      for (const { path } of routes(runId)) {
        const r = await read(path);
        alone.set(path, r.cpuMs);
        note(path, r);
      }
      // Ten concurrent readers of each route (one viewer token), as the probe did.
      for (const { path } of routes(runId)) {
        health.mark();
        for (const r of await Promise.all(Array.from({ length: 10 }, () => read(path)))) {
          note(path, r);
        }
        healthDuring.set(path, health.mark());
      }
    } finally {
      clearInterval(sampler);
    }
    const { worstMs: healthMs, polls } = await health.stop();
    const rssGrowthMiB = (rssPeak - rssBefore) / 2 ** 20;
    for (const [path, r] of worst) {
      console.log(
        `[bounded-routes] ${path.replace(runId, '{id}')}: worst ${(r.bytes / 1024).toFixed(1)} KiB in ${r.ms.toFixed(0)} ms (10 at once, /healthz ${healthDuring.get(path)?.toFixed(0)} ms); one read ${alone.get(path)?.toFixed(0)} ms CPU`,
      );
    }
    console.log(
      `[bounded-routes] /healthz worst ${healthMs.toFixed(0)} ms over ${polls} polls; ` +
        `process RSS +${rssGrowthMiB.toFixed(1)} MiB during the reads`,
    );
    for (const { path, maxBytes, maxCpuMs } of routes(runId)) {
      expect(worst.get(path)?.bytes, path).toBeLessThanOrEqual(maxBytes);
      // CPU, not wall time: the machine is shared, and a loaded one stretches wall time only.
      expect(alone.get(path), path).toBeLessThan(maxCpuMs);
    }
    expect(polls).toBeGreaterThan(5);
    // The probe: ten reads of the 20,000-entry catalogue stalled /healthz 33.6 s.
    expect(healthMs).toBeLessThan(10_000);
    // ...and took the control plane from 128 to 1,264 MiB. RSS counts garbage not yet collected
    // (no forced GC here): +180 to +257 MiB measured on a loaded 2-core machine, so the bound
    // is set well clear of that noise and well under the issue's +1,136 MiB.
    expect(rssGrowthMiB).toBeLessThan(512);
  }, 600_000);

  it('keeps the whole catalogue reachable a page at a time, and its summary exact', async () => {
    const first = await fetch(`${base}/v1/runs/${runId}/checkpoints?status=kept`, {
      headers: { authorization: `Bearer ${TOKENS.acmeViewer}` },
    });
    const list = (await first.json()) as {
      summary: { kept: number; deleted: { count: number; firstStep: number; lastStep: number } };
      checkpoints: Array<{ step: number }>;
    };
    expect(list.summary).toMatchObject({
      kept: KEEP,
      deleted: { count: STEPS - KEEP, firstStep: 1, lastStep: STEPS - KEEP },
    });
    expect(list.checkpoints.map((c) => c.step)).toEqual([STEPS - 2, STEPS - 1, STEPS]);
    // Redis holds the run in bytes proportional to its steps (step records, the compacted
    // catalogue, the capped event stream): nothing grows faster. Measured 4,075-4,100 B/step
    // (MEMORY USAGE varies with the lengths of ids, paths and numbers); the bound leaves that
    // noise room and still fails if a step's share grows by half (a catalogue entry kept whole,
    // a second copy of the step record).
    expect(redisBytesPerStep).toBeLessThan(6144);
    expect(redisRunBytes).toBeGreaterThan(0);
  });
});
