// kill -9 of a worker running the REAL executors (embedded engines, tiny model) at a seeded
// random step; a second worker process resumes the run. Asserts 0 lost and 0 duplicated step
// records (the step index, the step hash and the step:committed events) and records how long
// detection and resumption took, two ways:
//   - `heartbeat`: the control plane's lost-worker sweep (store releaseRunsOfLostWorkers, run
//     here at the sweep period) moves the run to `retrying` once the worker's heartbeat record
//     expires; the job itself is re-delivered when its BullMQ lock expires;
//   - `lock-expiry`: no sweep; the standby worker's stalled-job check notices the expired lock.
// `npm test` runs SFT only; ANNEAL_SOAK=1 (`npm run soak`) runs SFT, RM, GRPO and eval.
// Figures: .anneal/reliability/ -> docs/reliability.md (scripts/reliability-report.mjs).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  getRun,
  getTransitions,
  getWorker,
  keys,
  readEvents,
  readSteps,
  releaseRunsOfLostWorkers,
} from '@anneal/store';
import { type TestEnv, REDIS_URL, eventually, testEnv } from './helpers.ts';
import { type RealWorker, killHard, spawnRealWorker } from './reliability/real-worker.ts';
import { recordResult } from './reliability/results.ts';
import { pick, seededRandom } from './reliability/seeded.ts';

// Read here only (the test's own switches, not the worker's environment).
const SOAK = process.env.ANNEAL_SOAK === '1';
const SEED = Number(process.env.ANNEAL_RELIABILITY_SEED ?? '20261201');

/** Scaled-down production timings (production: 30 s TTL, 5 s sweep, 60 s lock, 30 s check). */
const TIMING = {
  heartbeatSeconds: 0.5,
  // Above the longest event-loop stall of a step here, else the sweep takes a live worker for lost.
  heartbeatTtlSeconds: 5,
  sweepMs: 500,
  stalledIntervalMs: 1_000,
};
/** Job lock per kind: an RM or GRPO step on the embedded engines can hold the worker's event
 * loop for seconds on a loaded 2-core machine, and a lock not renewed in time makes BullMQ
 * re-deliver a job whose worker is alive (a spurious retry this test would count). */
const LOCK_MS: Record<Kind, number> = { sft: 15_000, rm: 30_000, grpo: 30_000, eval: 30_000 };

type Kind = 'sft' | 'rm' | 'grpo' | 'eval';
type Mode = 'heartbeat' | 'lock-expiry';

/** Tiny specs for the embedded `tiny` model; the kill comes after a checkpoint (killAfter range)
 * so that the resume from it is exercised too. */
interface CaseSpec {
  steps: number;
  killAfter: [number, number];
  /** SFT_RUN in `yaml` is replaced by the id of a short SFT run finished first. */
  needsSft?: boolean;
  yaml: string;
}
const SPECS: Record<Kind, CaseSpec> = {
  sft: {
    steps: 16,
    killAfter: [5, 12],
    yaml: 'kind: sft\nsteps: 16\nbatchSize: 2\ncheckpointInterval: 4',
  },
  rm: {
    steps: 6,
    killAfter: [3, 4],
    yaml: 'kind: rm\nsteps: 6\nbatchSize: 4\ncheckpointInterval: 2',
  },
  grpo: {
    steps: 5,
    killAfter: [3, 3],
    yaml: [
      'kind: grpo',
      'steps: 5',
      'checkpointInterval: 2',
      'rollout: { groupSize: 2, promptsPerStep: 2, maxTokens: 16 }',
    ].join('\n'),
  },
  eval: {
    steps: 4,
    killAfter: [2, 3],
    // Four checkpoints of a short SFT run (one eval step each): eval of `{ base: tiny }` without
    // weights fails on the embedded sampler ("no weights loaded under the name ''").
    needsSft: true,
    yaml: [
      'kind: eval',
      'models: [{ checkpoint: { run: SFT_RUN } }, { checkpoint: { run: SFT_RUN } },',
      '  { checkpoint: { run: SFT_RUN } }, { checkpoint: { run: SFT_RUN } }]',
      'datasets: [search-qa]',
      'examples: 2',
      // One budget: one step per checkpoint (a sweep has one per checkpoint × budget).
      'budgets: { toolCallBudgets: [1], maxToolCalls: 1, maxOutputTokens: 16 }',
    ].join('\n'),
  },
};

const CASES: Array<[Kind, Mode]> = SOAK
  ? (['sft', 'rm', 'grpo', 'eval'] as const).flatMap((k): Array<[Kind, Mode]> => [
      [k, 'heartbeat'],
      [k, 'lock-expiry'],
    ])
  : [
      ['sft', 'heartbeat'],
      ['sft', 'lock-expiry'],
    ];

let env: TestEnv;
const spawned: RealWorker[] = [];
beforeEach(async () => {
  env = await testEnv();
});
afterEach(async () => {
  for (const w of spawned.splice(0)) await killHard(w);
  await env.cleanup();
});

function worker(id: string, kind: Kind): RealWorker {
  const w = spawnRealWorker({
    id,
    heartbeatTtlSeconds: TIMING.heartbeatTtlSeconds,
    env: {
      REDIS_URL,
      ANNEAL_KEY_PREFIX: env.prefix,
      ANNEAL_POOL: env.pool,
      ANNEAL_ARTIFACT_DIR: env.artifactDir,
      ANNEAL_METRICS_PORT: '0',
      ANNEAL_METRICS_HOST: '127.0.0.1',
      ANNEAL_LOG_LEVEL: 'info', // the resuming worker logs the checkpoint it resumes from
      ANNEAL_HEARTBEAT_SECONDS: String(TIMING.heartbeatSeconds),
      ANNEAL_LOCK_DURATION_MS: String(LOCK_MS[kind]),
      ANNEAL_STALLED_INTERVAL_MS: String(TIMING.stalledIntervalMs),
    },
  });
  spawned.push(w);
  return w;
}

/** Adds the workers' output to a failure. */
const withOutput = (workers: RealWorker[]) => (error: unknown) => {
  throw new Error(
    `${String(error)}\n${workers.map((w) => `--- ${w.id}\n${w.output()}`).join('\n')}`,
  );
};

/** The control plane's sweep, at its period, until stopped. */
function sweeper(periodMs: number) {
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      await releaseRunsOfLostWorkers(env.store, ['default']);
      await new Promise((resolve) => setTimeout(resolve, periodMs));
    }
  })();
  return async () => {
    stopped = true;
    await loop;
  };
}

describe.each(CASES)('kill -9 of a worker running the real %s executor', (kind, mode) => {
  it(`resumes on another worker (${mode}); 0 lost, 0 duplicated step records`, async () => {
    const { steps, yaml, killAfter: range } = SPECS[kind];
    // One seed per case, derived from the base seed: kill after a step in the kind's range.
    const random = seededRandom(SEED + kind.length * 31 + (mode === 'heartbeat' ? 1 : 2));
    const killAfter = pick(random, ...range);
    const label = `${kind}/${mode} seed=${SEED} kill after step ${killAfter}`;

    // Both workers are up (registered) before the run is submitted: whichever takes it is
    // killed, the other is the standby, so the figures are detection and resumption, not
    // process start-up.
    const pair = [worker(`${kind}-${mode}-a`, kind), worker(`${kind}-${mode}-b`, kind)];
    await eventually(
      async () => (await Promise.all(pair.map((w) => getWorker(env.store, w.id)))).every(Boolean),
      90_000,
      `${label}: workers up`,
    ).catch(withOutput(pair));
    const sftRun = SPECS[kind].needsSft
      ? await env.submit('kind: sft\nsteps: 2\nbatchSize: 2\ncheckpointInterval: 1')
      : null;
    if (sftRun) {
      await eventually(
        async () => (await getRun(env.store, sftRun))?.state === 'succeeded',
        120_000,
        `${label}: the sft run for its checkpoint`,
      ).catch(withOutput(pair));
    }
    const runId = await env.submit(sftRun ? yaml.replaceAll('SFT_RUN', sftRun) : yaml);
    const victimId = await eventually(
      async () => (await getRun(env.store, runId))?.workerId,
      90_000,
      `${label}: a worker took the run`,
    ).catch(withOutput(pair));
    const a = pair.find((w) => w.id === victimId)!;
    const b = pair.find((w) => w.id !== victimId)!;
    await eventually(
      async () => {
        const run = await getRun(env.store, runId);
        if (run?.state === 'succeeded' || run?.state === 'failed') {
          throw new Error(
            `${label}: the run ended (${run.state}${run.error ? `: ${run.error}` : ''}) before the kill`,
          );
        }
        return (run?.lastStep ?? 0) >= killAfter;
      },
      120_000,
      `${label}: step ${killAfter} committed`,
    ).catch(withOutput(pair));
    const stopSweep = mode === 'heartbeat' ? sweeper(TIMING.sweepMs) : async () => {};
    const killedAt = Date.now();
    expect(await killHard(a)).toBe('SIGKILL');
    const atCrash = await getRun(env.store, runId);
    const checkpointStep = atCrash?.checkpoint?.step ?? 0;
    const stepAtKill = atCrash?.lastStep ?? 0;

    let detectMs: number | null = null;
    const resumed = eventually(
      async () => {
        const run = await getRun(env.store, runId);
        if (detectMs === null && (run?.state !== 'running' || run.workerId !== a.id)) {
          detectMs = Date.now() - killedAt;
        }
        return run?.state === 'running' && run.workerId === b.id;
      },
      120_000,
      `${label}: b resumed`,
    );
    await resumed.catch(withOutput([b]));
    const recoverMs = Date.now() - killedAt;
    await stopSweep();
    await eventually(
      async () => {
        const run = await getRun(env.store, runId);
        if (run?.state === 'failed') throw new Error(`${label}: run failed: ${run.error}`);
        return run?.state === 'succeeded';
      },
      180_000,
      `${label}: b finished`,
    ).catch(withOutput([b]));

    // Detected: by the sweep (heartbeat) or by b's stalled-job check (lock expiry).
    const transitions = await getTransitions(env.store, runId);
    const retry = transitions.find((t) => t.to === 'retrying');
    expect(retry?.reason).toMatch(
      mode === 'heartbeat' ? /heartbeat expired/ : new RegExp(`worker ${a.id} lost`),
    );
    expect(transitions.map((t) => t.to)).toEqual([
      'queued',
      'running',
      'retrying',
      'running',
      'succeeded',
    ]);
    // Resumed from the checkpoint the run held at the crash (or from scratch without one).
    const resumedAt = b
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg?: string; runId?: string; step?: number })
      .filter((l) => l.msg === 'resuming from checkpoint' && l.runId === runId)
      .map((l) => l.step);
    expect(resumedAt).toEqual(checkpointStep > 0 ? [checkpointStep] : []);

    // Every step exactly once: the step index, the step hash and the committed events.
    const expected = Array.from({ length: steps }, (_, i) => i + 1);
    const records = await readSteps(env.store, runId);
    expect(records.map((s) => s.step)).toEqual(expected);
    // The step hash (field = step number) and the record each field holds.
    const stored = await env.redis.hgetall(keys(env.prefix).steps(runId));
    const list = Object.entries(stored).map(([field, record]) => {
      const { step } = JSON.parse(record) as { step: number };
      expect(step).toBe(Number(field));
      return step;
    });
    const committed = (await readEvents(env.store, runId, '0', 10_000))
      .filter((e) => e.event.type === 'step:committed')
      .map((e) => (e.event as { step: number }).step);
    const lost = expected.filter((s) => !list.includes(s) || !committed.includes(s)).length;
    const duplicated =
      list.length - new Set(list).size + (committed.length - new Set(committed).size);
    expect({ lost, duplicated }).toEqual({ lost: 0, duplicated: 0 });
    expect([...list].sort((x, y) => x - y)).toEqual(expected);

    await recordResult({
      scenario: `worker kill -9 (${kind})`,
      variant: mode,
      lost,
      duplicated,
      detectMs,
      recoverMs,
      detail:
        `seed ${SEED}, killed after step ${stepAtKill}/${steps}, resumed from checkpoint ${checkpointStep}; ` +
        `heartbeat ${TIMING.heartbeatSeconds}s/TTL ${TIMING.heartbeatTtlSeconds}s, sweep ${TIMING.sweepMs}ms, ` +
        `lock ${LOCK_MS[kind]}ms, stalled check ${TIMING.stalledIntervalMs}ms`,
    });
  }, 400_000);
});
