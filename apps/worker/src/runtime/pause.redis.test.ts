// Pausing on the worker: a run that asks to pause itself (ctx.pause, what guardrails and budgets
// call) ends its attempt as `paused` after the step under way, releasing its served weights and
// its slot; resumed, it continues in a new attempt. A pause withdrawn by a resume before the
// worker acted hands the run back instead of pausing it.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { enqueueRun, getRun, requestPause, resumeRun, startRun } from '@anneal/store';
import { STUB_EMBEDDED, STUB_FACTORIES, stubInference } from '../../test/fixtures/engines.ts';
import { type TestEnv, eventually, testEnv } from '../../test/helpers.ts';
import type { Executor } from '../executors/types.ts';

let env: TestEnv;
beforeEach(async () => {
  env = await testEnv();
});
afterEach(async () => {
  await env.cleanup();
});

/** A promise the test resolves when it is ready for the executor to go on. */
function gate() {
  let open = () => {};
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

describe('pausing a run on the worker', () => {
  it('pauses at the step boundary when the run asks, frees its weights and slot, and resumes', async () => {
    const released: string[] = [];
    const inference = {
      ...stubInference(),
      releaseWeights: async (name: string) => void released.push(name),
    };
    const attempts: Array<{ attempt: number; resumeFrom: number | null; steps: number[] }> = [];
    const grpo: Executor = async (ctx) => {
      const seen = {
        attempt: ctx.attempt,
        resumeFrom: ctx.resumeFrom?.step ?? null,
        steps: [] as number[],
      };
      attempts.push(seen);
      await ctx.resources.inference.loadWeights({ name: `${ctx.runId}-policy`, path: '/p' });
      for (let step = (ctx.resumeFrom?.step ?? 0) + 1; step <= 4; step++) {
        if (ctx.stopSignal.aborted) return { summary: {}, finalCheckpoint: null, stopped: true };
        if (step === 2 && ctx.attempt === 1) {
          await ctx.pause({ by: 'guardrail', reason: 'rule kl_spike: kl 9.1 > 2' });
          // The step under way still ends and is committed (a pause abandons nothing).
          expect(ctx.stopSignal.aborted).toBe(true);
        }
        await ctx.commitStep(step, { loss: 1 / step });
        await ctx.recordCheckpoint(step, `/ckpt/${step}`);
        seen.steps.push(step);
      }
      return { summary: {}, finalCheckpoint: '/ckpt/4', stopped: false };
    };
    const worker = await env.startWorker(
      {},
      {
        executors: { grpo },
        factories: {
          ...STUB_FACTORIES,
          embedded: { ...STUB_EMBEDDED, inference: async () => inference },
        },
      },
    );
    const id = await env.submit('kind: grpo');
    await eventually(async () => (await getRun(env.store, id))?.state === 'paused');
    await eventually(() => worker.runs().length === 0, 5_000, 'slot freed');
    await eventually(() => released.length === 1, 5_000, 'weights released');
    expect(released).toEqual([`${id}-policy`]);
    const paused = await getRun(env.store, id, { transitions: true });
    expect(paused).toMatchObject({
      lastStep: 2,
      checkpoint: { step: 2 },
      pause: { by: 'guardrail', reason: 'rule kl_spike: kl 9.1 > 2' },
    });
    expect(paused?.transitions?.at(-1)).toMatchObject({
      from: 'running',
      to: 'paused',
      by: 'guardrail',
      reason: 'paused by guardrail: rule kl_spike: kl 9.1 > 2',
      workerId: worker.id,
    });
    // Nothing re-delivers a paused run's job.
    expect(await env.queues.get(env.pool).getJobState(id)).toBe('completed');

    expect(await resumeRun(env.store, env.queues, id, 'resumed by test')).toMatchObject({
      status: 'queued',
      run: { state: 'queued' },
    });
    await eventually(async () => (await getRun(env.store, id))?.state === 'succeeded', 10_000);
    expect(attempts).toEqual([
      { attempt: 1, resumeFrom: null, steps: [1, 2] },
      { attempt: 2, resumeFrom: 2, steps: [3, 4] },
    ]);
    const done = await getRun(env.store, id, { transitions: true });
    expect(done?.pause).toBeUndefined();
    expect(done?.transitions?.map((t) => t.to)).toEqual([
      'queued',
      'running',
      'paused',
      'queued',
      'running',
      'succeeded',
    ]);
  });

  it('hands the run back when a resume withdrew the pause before the boundary', async () => {
    const started = gate();
    const stopSeen = gate();
    const goOn = gate();
    const attempts: number[] = [];
    const sft: Executor = async (ctx) => {
      attempts.push(ctx.attempt);
      if (ctx.attempt === 1) {
        started.open();
        ctx.stopSignal.addEventListener('abort', () => stopSeen.open(), { once: true });
        await goOn.opened;
        await ctx.commitStep(1, { loss: 1 });
        await ctx.recordCheckpoint(1, '/ckpt/1');
        return { summary: {}, finalCheckpoint: null, stopped: true };
      }
      await ctx.commitStep(2, { loss: 0.5 });
      return { summary: {}, finalCheckpoint: null, stopped: false };
    };
    const worker = await env.startWorker({}, { executors: { sft } });
    const id = await env.submit('kind: sft');
    await started.opened;
    expect(await requestPause(env.store, env.queues, id, { by: 'user', reason: 'x' })).toEqual({
      status: 'requested',
    });
    await stopSeen.opened; // the worker has the pause (pub/sub); now take it back
    expect(await resumeRun(env.store, env.queues, id, 'never mind')).toEqual({
      status: 'withdrawn',
      state: 'running',
    });
    goOn.open();
    await eventually(async () => (await getRun(env.store, id))?.state === 'succeeded', 10_000);
    expect(attempts).toEqual([1, 2]);
    const run = await getRun(env.store, id, { transitions: true });
    expect(run?.transitions?.map((t) => t.to)).toEqual([
      'queued',
      'running',
      'retrying',
      'running',
      'succeeded',
    ]);
    expect(run?.transitions?.[2]?.reason).toContain('resumed before it paused');
    expect(worker.runs()).toEqual([]);
  });

  it('pauses at once a run taken over from a lost worker while a pause was pending', async () => {
    let ran = false;
    const sft: Executor = async () => {
      ran = true;
      return { summary: {}, finalCheckpoint: null, stopped: false };
    };
    const id = await env.submit('kind: sft', { enqueue: false });
    await startRun(env.store, id, 'w-gone');
    await requestPause(env.store, env.queues, id, { by: 'budget', reason: 'run budget spent' });
    // No sweep ran: BullMQ re-delivers the job once its lock expired, and the worker that takes
    // it takes the run over (running -> retrying -> running), then pauses it.
    await enqueueRun(env.queues.get(env.pool), { id, priority: 50 });
    const worker = await env.startWorker({}, { executors: { sft } });
    await eventually(async () => (await getRun(env.store, id))?.state === 'paused');
    expect(ran).toBe(false);
    const run = await getRun(env.store, id, { transitions: true });
    expect(run?.transitions?.slice(-2)).toMatchObject([
      { from: 'retrying', to: 'running', workerId: worker.id },
      { from: 'running', to: 'paused', by: 'budget', reason: 'paused by budget: run budget spent' },
    ]);
    await eventually(() => worker.runs().length === 0, 5_000, 'slot freed');
  });
});
