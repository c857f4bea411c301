// A killed eval resumes after its last committed cell (docs/evaluation.md "Resuming a killed
// eval"), on the REAL eval executor and the embedded engines (tiny model), against the store:
//   - always: attempt 1 dies inside a cell (its item lines written, its step not committed),
//     attempt 2 takes the run over and finishes it; attempt 1's late step write is fenced;
//   - ANNEAL_SOAK=1 (`npm run soak`): kill -9 of a worker process mid-sweep, the standby worker
//     notices the expired job lock and retries the run (worker processes start in tens of
//     seconds on a loaded machine, hence soak only).
// Both assert every cell committed exactly once, the cells committed before the crash kept as
// the crashed attempt wrote them (step records and item lines of attempt 1), and
// eval-items.jsonl listing each (checkpoint, budget, question) exactly once.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ByteTokenizer, EmbeddedInferenceEngine, EmbeddedTrainer } from '@anneal/engines';
import { builtinTasks } from '@anneal/envs';
import type { StepRecord } from '@anneal/protocol';
import {
  appendStep,
  getRun,
  getTransitions,
  getWorker,
  readEvents,
  readSteps,
  startRun,
} from '@anneal/store';
import { createEventBus, noopLogger } from '@anneal/telemetry';
import { builtinDataCatalog } from '../src/resources/data/builtin-catalog.ts';
import type { EvalItem } from '../src/executors/eval/cell.ts';
import { ITEMS_FILE, runEval } from '../src/executors/eval/index.ts';
import type { RunResources } from '../src/executors/types.ts';
import { ActiveRun } from '../src/runtime/active-runs.ts';
import { specOfKind } from './executors/fakes.ts';
import { createExecutorContext } from '../src/runtime/run-context.ts';
import { type TestEnv, REDIS_URL, eventually, resolveSpec, testEnv } from './helpers.ts';
import { type RealWorker, killHard, spawnRealWorker } from './reliability/real-worker.ts';

// Read here only (the test's own switch, not the worker's environment).
const SOAK = process.env.ANNEAL_SOAK === '1';
const CHECKPOINTS = 2;
const BUDGETS = [0, 1, 2, 3, 4, 5];
const EXAMPLES = 6;
const CELLS = CHECKPOINTS * BUDGETS.length;
/** The crash comes once this many cells are committed (well before the last). */
const CRASH_AFTER = 3;
const SPEC = [
  'kind: eval',
  'models: [{}, {}]', // the base model twice, exported through the embedded trainer
  'datasets: [search-qa]',
  `examples: ${EXAMPLES}`,
  `budgets: { toolCallBudgets: [${BUDGETS.join(', ')}], maxToolCalls: 1, maxOutputTokens: 24, statePrompt: false }`,
].join('\n');
const TINY = { vocabSize: 264, blockSize: 256, nLayer: 1, nHead: 2, nEmbd: 32 };

let env: TestEnv;
beforeEach(async () => {
  env = await testEnv();
});
afterEach(() => env.cleanup());

/** The sweep, checked against the store and the item file after the retry finished. */
async function checkExactlyOnce(
  runId: string,
  itemsDir: string,
  crash: { step: number; at: string },
): Promise<void> {
  // Each cell committed exactly once: the step records and the step:committed events.
  const records: StepRecord[] = await readSteps(env.store, runId);
  const cells = Array.from({ length: CELLS }, (_, i) => i + 1);
  expect(records.map((r) => r.step)).toEqual(cells);
  expect(records.map((r) => [r.metrics['eval/checkpoint'], r.metrics['eval/budget']])).toEqual(
    cells.map((s) => [Math.floor((s - 1) / BUDGETS.length), BUDGETS[(s - 1) % BUDGETS.length]]),
  );
  const committed = (await readEvents(env.store, runId, '0', 10_000))
    .filter((e) => e.event.type === 'step:committed')
    .map((e) => (e.event as { step: number }).step);
  expect(committed).toEqual(cells);
  // The cells before the crash are the crashed attempt's, the rest the retry's.
  for (const r of records) {
    expect(r.at < crash.at, `step ${r.step} committed before the crash`).toBe(r.step <= crash.step);
  }
  // eval-items.jsonl: each (checkpoint, budget, question) once, answered by the attempt that
  // committed its cell (the crashed attempt's lines of its partial cell were dropped).
  const items = (await readFile(path.join(itemsDir, ITEMS_FILE), 'utf8'))
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as EvalItem);
  expect(items).toHaveLength(CELLS * EXAMPLES);
  const keys = items.map((x) => `${x.checkpoint}/${x.budget}/${x.id}`);
  expect(new Set(keys).size).toBe(keys.length);
  expect(items.map((x) => [x.step, x.attempt === 1])).toEqual(
    items.map((x) => [x.step, x.step <= crash.step]),
  );
  const correct = (step: number) => items.filter((x) => x.step === step && x.correct).length;
  for (const r of records)
    expect(r.metrics['eval/correct'], `step ${r.step}`).toBe(correct(r.step));
}

class Crash extends Error {}

describe('a crashed eval attempt, retried (store-backed, real eval executor)', () => {
  let dir: string;
  let inference: EmbeddedInferenceEngine;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'anneal-eval-crash-'));
    inference = new EmbeddedInferenceEngine({ threads: 1 });
  });
  afterEach(async () => {
    await inference.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('resumes after the last committed cell: each cell and item exactly once', async () => {
    const spec = resolveSpec(SPEC, env.operatorConfig);
    const runId = await env.submit(SPEC, { enqueue: false });
    const target = { label: 'tiny', baseModel: 'tiny', checkpoint: null };
    const resources: RunResources = {
      tokenizer: new ByteTokenizer(),
      trainer: new EmbeddedTrainer({ artifactDir: dir, baseModels: { tiny: TINY } }),
      inference,
      model: target,
      evalModels: [target, { ...target, label: 'again' }],
      data: builtinDataCatalog(builtinTasks(0)),
    };
    const deps = {
      store: env.store,
      telemetry: createEventBus(),
      logger: noopLogger,
    };
    const artifactDir = path.join(dir, 'runs', runId);
    const attempt = async (workerId: string, crashAt?: number) => {
      const started = await startRun(env.store, runId, workerId);
      if (started.status !== 'started') throw new Error(`startRun: ${started.status}`);
      const ctx = createExecutorContext(
        { ...deps, workerId },
        new ActiveRun(runId, 'eval', Date.now()),
        { spec, resources, resumeFrom: null, artifactDir },
        started.attempt,
      );
      const commit = ctx.commitStep.bind(ctx);
      // Dies inside cell `crashAt`: its items are written, its step is not committed.
      ctx.commitStep = (step, metrics) =>
        step === crashAt
          ? Promise.reject(new Crash(`crashed in step ${step}`))
          : commit(step, metrics);
      return { started, run: runEval({ ...ctx, spec: specOfKind('eval', ctx.spec) }) };
    };

    const first = await attempt('worker-a', CRASH_AFTER + 1);
    await expect(first.run).rejects.toThrow(Crash);
    const crash = {
      step: (await getRun(env.store, runId))?.lastStep ?? 0,
      at: new Date().toISOString(),
    };
    expect(crash.step).toBe(CRASH_AFTER);
    const partial = (await readFile(path.join(artifactDir, ITEMS_FILE), 'utf8')).trim().split('\n');
    expect(partial).toHaveLength((CRASH_AFTER + 1) * EXAMPLES); // the partial cell's lines too

    const second = await attempt('worker-b'); // takes the run over: attempt 2
    expect(second.started).toMatchObject({
      status: 'started',
      attempt: 2,
      run: { workerId: 'worker-b' },
    });
    // The crashed attempt's step write is fenced from now on.
    const late = await appendStep(env.store, runId, CRASH_AFTER + 1, {}, { attempt: 1 });
    expect(late.status).toBe('fenced');
    const result = await second.run;
    expect(result.stopped).toBe(false);
    expect(result.summary['again/knee']).toEqual(expect.any(Number));
    await checkExactlyOnce(runId, artifactDir, crash);
  }, 60_000);
});

function worker(id: string): RealWorker {
  return spawnRealWorker({
    id,
    heartbeatTtlSeconds: 5,
    env: {
      REDIS_URL,
      ANNEAL_KEY_PREFIX: env.prefix,
      ANNEAL_POOL: env.pool,
      ANNEAL_ARTIFACT_DIR: env.artifactDir,
      ANNEAL_METRICS_PORT: '0',
      ANNEAL_METRICS_HOST: '127.0.0.1',
      // Long enough that the embedded trainer's weight export, which holds the event loop for
      // seconds on a loaded machine, does not expire it (a spurious retry; 15 s did once).
      ANNEAL_LOCK_DURATION_MS: '30000',
      ANNEAL_STALLED_INTERVAL_MS: '1000',
    },
  });
}

const withOutput = (workers: RealWorker[]) => (error: unknown) => {
  throw new Error(
    `${String(error)}\n${workers.map((w) => `--- ${w.id}\n${w.output()}`).join('\n')}`,
  );
};

if (SOAK) {
  describe('kill -9 of a worker process in the middle of an eval sweep', () => {
    const spawned: RealWorker[] = [];
    afterEach(async () => {
      for (const w of spawned.splice(0)) await killHard(w);
    });

    it('the retry resumes after the last committed cell: each cell and item exactly once', async () => {
      const pair = [worker('eval-a'), worker('eval-b')];
      spawned.push(...pair);
      await eventually(
        async () => (await Promise.all(pair.map((w) => getWorker(env.store, w.id)))).every(Boolean),
        90_000,
        'workers up',
      ).catch(withOutput(pair));
      const runId = await env.submit(SPEC);
      const victimId = await eventually(
        async () => (await getRun(env.store, runId))?.workerId,
        30_000,
        'a worker took the run',
      ).catch(withOutput(pair));
      const a = pair.find((w) => w.id === victimId)!;
      const b = pair.find((w) => w.id !== victimId)!;
      await eventually(
        async () => ((await getRun(env.store, runId))?.lastStep ?? 0) >= CRASH_AFTER,
        90_000,
        `cell ${CRASH_AFTER} committed`,
      ).catch(withOutput(pair));
      const at = new Date().toISOString();
      expect(await killHard(a)).toBe('SIGKILL');
      const step = (await getRun(env.store, runId))?.lastStep ?? 0;
      expect(step).toBeLessThan(CELLS); // killed mid-sweep
      await eventually(
        async () => {
          const run = await getRun(env.store, runId);
          if (run?.state === 'failed') throw new Error(`run failed: ${run.error}`);
          return run?.state === 'succeeded';
        },
        120_000,
        'b finished the run',
      ).catch(withOutput([b]));
      const transitions = await getTransitions(env.store, runId);
      expect(
        transitions.map((t) => t.to),
        transitions.map((t) => `${t.to}: ${t.reason}`).join('\n'),
      ).toEqual(['queued', 'running', 'retrying', 'running', 'succeeded']);
      await checkExactlyOnce(runId, path.join(env.artifactDir, 'runs', runId), { step, at });
    }, 300_000);
  });
}
