// End to end through the runtime with the real executors and the embedded engines: queue ->
// worker -> resources (embedded trainer over the Tinker HTTP subset + ONNX sampler) -> sft ->
// grpo from the sft run's checkpoint (`model: {checkpoint: {run}}`) -> step records + metrics.
import { afterEach, beforeEach, expect, it } from 'vitest';
import { getRun, readSteps } from '@anneal/store';
import { type TestEnv, eventually, testEnv } from './helpers.ts';
import { readRunOutcome } from '../src/resources/run-outcome.ts';

let env: TestEnv;
beforeEach(async () => {
  env = await testEnv();
});
afterEach(async () => {
  await env.cleanup();
});

const finite = (v: unknown) => typeof v === 'number' && Number.isFinite(v);

it('sft then grpo from its checkpoint, with the embedded engines, through the queue', async () => {
  const worker = await env.startWorker({}, { executors: undefined, factories: {} });
  const done = async (runId: string) => {
    const run = await getRun(env.store, runId);
    if (run?.state === 'failed') throw new Error(`run failed: ${run.error}`);
    return run?.state === 'succeeded';
  };
  const sft = await env.submit('kind: sft\nsteps: 3\nbatchSize: 4\ncheckpointInterval: 2');
  await eventually(() => done(sft), 120_000, 'sft succeeded');
  const sftOutcome = await readRunOutcome(env.store, sft);
  expect(sftOutcome.finalCheckpoint).toMatch(/^tinker:\/\//); // saved through the HTTP trainer

  const grpo = await env.submit(
    [
      'kind: grpo',
      'steps: 2',
      'checkpointInterval: 1',
      `model: { checkpoint: { run: ${sft} } }`,
      'rollout: { groupSize: 4, promptsPerStep: 2, maxTokens: 40 }',
    ].join('\n'),
  );
  const scraped = eventually(
    async () => {
      const text = await (await fetch(worker.metricsUrl)).text();
      return text.includes(`anneal_run_train_inference_kl{run_id="${grpo}",estimator="k3"}`)
        ? text
        : null;
    },
    180_000,
    'grpo KL exported',
  );
  await eventually(() => done(grpo), 180_000, 'grpo succeeded');
  const text = await scraped;
  expect(text).toMatch(
    /anneal_worker_engine_request_duration_seconds_count\{[^}]*engine="trainer"/,
  );
  expect(text).toMatch(
    /anneal_worker_engine_request_duration_seconds_count\{[^}]*engine="inference"/,
  );
  const steps = await readSteps(env.store, grpo);
  expect(steps.map((s) => s.step)).toEqual([1, 2]);
  for (const { metrics } of steps) {
    expect(finite(metrics.train_inference_kl)).toBe(true);
    expect(finite(metrics.grad_norm)).toBe(true);
    expect(finite(metrics['reward/all'])).toBe(true);
  }
  expect((await getRun(env.store, grpo))?.checkpoint?.step).toBe(2);
}, 300_000);
