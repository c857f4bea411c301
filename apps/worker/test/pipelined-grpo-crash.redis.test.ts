// kill -9 of a worker process in the middle of a pipelined GRPO run (rollout.maxPolicyLag 1:
// the next step's batch is always in flight while a step trains), then a second worker resumes
// from the last checkpoint: every step is recorded exactly once (docs/recipe.md "Pipelined
// GRPO"). The worker runs the real grpo executor on in-memory fake engines
// (pipelined-grpo-entry.ts); the store, queue and processes are real.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { getRun, getTransitions, readSteps } from '@anneal/store';
import { type TestEnv, eventually, testEnv } from './helpers.ts';
import { type WorkerProcess, crashTestWorkers } from './process.ts';

const STEPS = 8;

let env: TestEnv;
const workers = crashTestWorkers(() => env);
const worker = (id: string) => workers.spawn(id, {}, 'pipelinedGrpo');
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

describe('pipelined GRPO (rollout.maxPolicyLag 1)', () => {
  it('kill -9 with a batch in flight: another worker resumes; every step recorded once', async () => {
    const a = worker('pipelined-a');
    const runId = await env.submit(
      [
        'kind: grpo',
        `steps: ${STEPS}`,
        'checkpointInterval: 3',
        'seed: 7',
        'rollout: { groupSize: 2, promptsPerStep: 2, maxTokens: 64, maxPolicyLag: 1 }',
        'labels: { step-ms: "100" }',
      ].join('\n'),
    );
    await eventually(
      async () => ((await getRun(env.store, runId))?.lastStep ?? 0) >= 4,
      60_000,
      'a ran 4 steps',
    ).catch(withOutput(a));
    a.child.kill('SIGKILL');
    expect(await a.exited).toBe('SIGKILL');
    const atCrash = await getRun(env.store, runId);
    expect(atCrash?.state).toBe('running');
    expect(atCrash?.lastStep).toBeLessThan(STEPS);

    const b = worker('pipelined-b');
    await eventually(
      async () => (await getRun(env.store, runId))?.state === 'succeeded',
      60_000,
      'b finished',
    ).catch(withOutput(b));
    const transitions = (await getTransitions(env.store, runId)).map((t) => t.to);
    expect(transitions).toEqual(['queued', 'running', 'retrying', 'running', 'succeeded']);
    const steps = await readSteps(env.store, runId);
    expect(steps.map((s) => s.step)).toEqual(Array.from({ length: STEPS }, (_, i) => i + 1));
    // pipelined throughout: every step after the first of an attempt trained on a lagged batch
    expect(steps.at(-1)?.metrics['policy_lag/max']).toBe(1);
  }, 120_000);
});
