import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { getRun, getTransitions, readSteps, requestCancel } from '@anneal/store';
import { readRunOutcome } from './resources/run-outcome.ts';
import { type TestEnv, eventually, sftSpec, testEnv } from '../test/helpers.ts';

let env: TestEnv;
beforeEach(async () => {
  env = await testEnv();
});
afterEach(async () => {
  await env.cleanup();
});

const stateOf = async (runId: string) => (await getRun(env.store, runId))?.state;

describe('worker runtime', () => {
  it('runs a queued run to success: steps, checkpoints, summary, transitions', async () => {
    const worker = await env.startWorker();
    const runId = await env.submit(sftSpec({ steps: 5, interval: 2 }));
    await eventually(async () => (await stateOf(runId)) === 'succeeded', 10_000, 'succeeded');
    const steps = await readSteps(env.store, runId);
    expect(steps.map((s) => s.step)).toEqual([1, 2, 3, 4, 5]);
    expect(steps[0]?.metrics).toMatchObject({ loss: 1, grad_norm: 0.5, custom_metric: null });
    const run = await getRun(env.store, runId, { transitions: true });
    expect(run?.workerId).toBe(worker.id);
    expect(run?.transitions?.map((t) => t.to)).toEqual(['queued', 'running', 'succeeded']);
    expect(run?.checkpoint?.step).toBe(5);
    const outcome = await readRunOutcome(env.store, runId);
    expect(outcome.summary).toEqual({ steps: 5, resumedFrom: null });
    expect(outcome.finalCheckpoint).toMatch(/ckpt-5\.json$/);
    expect(worker.runs()).toEqual([]);
  });

  it('exposes per-run and per-worker metrics, and drops the run series when it ends', async () => {
    const worker = await env.startWorker();
    const runId = await env.submit(sftSpec({ steps: 40, interval: 10, stepMs: 25 }));
    const scrape = async () => (await fetch(worker.metricsUrl)).text();
    const during = await eventually(
      async () => {
        const text = await scrape();
        return text.includes(`anneal_run_loss{run_id="${runId}"}`) ? text : null;
      },
      10_000,
      'run series exported',
    );
    expect(during).toMatch(/anneal_worker_slots_busy\{pool="default",worker="[^"]+"\} 1/);
    expect(during).toMatch(new RegExp(`anneal_run_grad_norm\\{run_id="${runId}"\\} 0.5`));
    expect(during).toMatch(/anneal_worker_heartbeat_timestamp_seconds\{[^}]+\} \d+/);
    await eventually(async () => (await stateOf(runId)) === 'succeeded', 15_000, 'succeeded');
    const after = await eventually(
      async () => {
        const text = await scrape();
        return text.includes(runId) ? null : text;
      },
      5_000,
      'run series removed',
    );
    expect(after).toMatch(/anneal_worker_slots_busy\{[^}]+\} 0/);
  });

  it('cancel: the executor stops at a step boundary after a final checkpoint', async () => {
    const worker = await env.startWorker();
    const runId = await env.submit(sftSpec({ steps: 500, interval: 100, stepMs: 20 }));
    await eventually(async () => ((await getRun(env.store, runId))?.lastStep ?? 0) >= 3);
    await requestCancel(env.store, runId, 'user asked');
    await eventually(async () => (await stateOf(runId)) === 'cancelled', 10_000, 'cancelled');
    const run = await getRun(env.store, runId, { transitions: true });
    expect(run?.transitions?.at(-1)?.reason).toBe('cancelled: user asked');
    expect(run?.checkpoint?.step).toBe(run?.lastStep); // final checkpoint at the boundary
    expect(run?.lastStep).toBeLessThan(500);
    expect(worker.runs()).toEqual([]);
  });

  it('retries a failed attempt from the last checkpoint (state retrying, then succeeded)', async () => {
    await env.startWorker();
    const runId = await env.submit(sftSpec({ steps: 6, interval: 2, failAt: 4 }));
    // JOB_CATALOGUE backoff: the retry starts ~5 s after the failure.
    await eventually(async () => (await stateOf(runId)) === 'succeeded', 20_000, 'succeeded');
    const transitions = await getTransitions(env.store, runId);
    expect(transitions.map((t) => t.to)).toEqual([
      'queued',
      'running',
      'retrying',
      'running',
      'succeeded',
    ]);
    expect(transitions[2]?.reason).toMatch(/attempt 1\/3 failed: injected failure at step 4/);
    expect((await readRunOutcome(env.store, runId)).summary).toEqual({ steps: 6, resumedFrom: 2 });
    expect((await readSteps(env.store, runId)).map((s) => s.step)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('fails at once, without retries, when the run cannot be set up', async () => {
    await env.startWorker({}, { executors: {} });
    const runId = await env.submit(sftSpec());
    await eventually(async () => (await stateOf(runId)) === 'failed', 10_000, 'failed');
    const run = await getRun(env.store, runId, { transitions: true });
    expect(run?.error).toMatch(/no executor for kind 'sft'/);
    expect(run?.transitions?.map((t) => t.to)).toEqual(['queued', 'running', 'failed']);
  });
});
