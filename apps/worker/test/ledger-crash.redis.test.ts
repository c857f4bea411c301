// kill -9 of GRPO workers at the two points where the rollout ledger and Redis disagree, on the
// real grpo executor with the embedded engines (ledger-grpo-entry.ts holds a commit there):
//   1. attempt 1 has written step 3's copy and is killed before Redis has the step;
//   2. attempt 2 has committed step 5 in Redis and is killed before renaming its copy;
// attempt 3 finishes. The ledger then holds every committed step exactly once, each from the
// attempt whose record Redis holds, with nothing else left in its directory
// (docs/reliability.md "The rollout ledger across killed attempts").
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import {
  ledgerDir,
  listLedgerSteps,
  readLedgerIndex,
  readLedgerStep,
  readSteps,
  getRun,
  runArtifactDir,
  stepDir,
} from '@anneal/store';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type TestEnv, eventually, testEnv } from './helpers.ts';
import { type WorkerProcess, crashTestWorkers } from './process.ts';

const STEPS = 7;
const GROUPS = 2;
const GROUP_SIZE = 2;

let env: TestEnv;
const workers = crashTestWorkers(() => env);
// A GRPO step on the embedded engines can hold the event loop for seconds on a loaded machine:
// a lock not renewed in time re-delivers the job of a live worker (a retry this test would not
// expect), as in crash-real-executors.redis.test.ts.
const worker = (id: string) =>
  workers.spawn(id, { ANNEAL_LOCK_DURATION_MS: '30000' }, 'ledgerGrpo');
beforeEach(async () => {
  env = await testEnv();
});
afterEach(async () => {
  await workers.killAll();
  await env.cleanup();
});

const withOutput = (w: WorkerProcess) => (error: unknown) => {
  throw new Error(`${String(error)}\n--- ${w.output()}`);
};

async function kill(w: WorkerProcess): Promise<void> {
  w.child.kill('SIGKILL');
  expect(await w.exited).toBe('SIGKILL');
}

describe('rollout ledger across killed attempts', () => {
  it('every committed step exactly once, from the attempt that committed it', async () => {
    const a = worker('ledger-a');
    const runId = await env.submit(
      [
        'kind: grpo',
        `steps: ${STEPS}`,
        'checkpointInterval: 2',
        'seed: 5',
        `rollout: { groupSize: ${GROUP_SIZE}, promptsPerStep: ${GROUPS}, maxTokens: 16 }`,
        'labels: { hold: "1:before:3,2:after:5" }',
      ].join('\n'),
    );
    const runDir = runArtifactDir(env.artifactDir, runId);
    const copy = (step: number, attempt: number) => `${stepDir(runDir, step)}.a${attempt}`;

    // 1. step 3's copy on disk, its record not in Redis
    await eventually(() => existsSync(copy(3, 1)), 120_000, 'attempt 1 wrote step 3').catch(
      withOutput(a),
    );
    expect((await readSteps(env.store, runId)).map((s) => s.step)).toEqual([1, 2]);
    await kill(a);

    // 2. attempt 2 resumes from step 2's checkpoint; step 5 in Redis, its copy not renamed
    const b = worker('ledger-b');
    await eventually(
      async () =>
        (await readSteps(env.store, runId)).some((s) => s.step === 5) && existsSync(copy(5, 2)),
      120_000,
      'attempt 2 committed step 5',
    ).catch(withOutput(b));
    expect(existsSync(copy(3, 1))).toBe(false); // attempt 2's start removed the uncommitted copy
    expect(existsSync(stepDir(runDir, 5))).toBe(false);
    await kill(b);

    // 3. attempt 3 resumes from step 4's checkpoint and finishes
    const c = worker('ledger-c');
    await eventually(
      async () => (await getRun(env.store, runId))?.state === 'succeeded',
      120_000,
      'attempt 3 finished',
    ).catch(withOutput(c));

    const steps = await readSteps(env.store, runId);
    expect(steps.map((s) => s.step)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(steps.map((s) => s.attempt)).toEqual([1, 1, 2, 2, 2, 3, 3]);
    expect(await listLedgerSteps(runDir)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect((await readdir(ledgerDir(runDir))).sort()).toEqual(
      steps.map((s) => path.basename(stepDir(runDir, s.step))),
    );
    for (const record of steps) {
      const index = await readLedgerIndex(runDir, record.step);
      expect(index?.attempt, `step ${record.step}`).toBe(record.attempt);
      const rollouts = (await readLedgerStep(runDir, record.step))!;
      expect(rollouts).toHaveLength(GROUPS * GROUP_SIZE * 2);
      expect(new Set(rollouts.map((r) => r.id)).size).toBe(rollouts.length);
      const policy = rollouts.filter((r) => r.role === 'policy');
      const reward = policy.reduce((sum, r) => sum + r.rewards!.reward, 0) / policy.length;
      expect(reward).toBeCloseTo(record.metrics['reward/all']!, 12);
    }
  }, 400_000);
});
