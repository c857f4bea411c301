import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { getRun, getTransitions, getWorker, readSteps, requestDrain } from '@anneal/store';
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
const lastStep = async (runId: string) => (await getRun(env.store, runId))?.lastStep ?? 0;

describe('slots, drain and shutdown', () => {
  it('holds as many runs at once as it has slots', async () => {
    const worker = await env.startWorker({ slots: 2 });
    const a = await env.submit(sftSpec({ steps: 60, interval: 30 }));
    const b = await env.submit(sftSpec({ steps: 60, interval: 30 }));
    await eventually(() => worker.runs().length === 2, 10_000, 'two runs held');
    expect(worker.runs().sort()).toEqual([a, b].sort());
    const record = await eventually(
      async () => {
        const w = await getWorker(env.store, worker.id);
        return w?.busy === 2 ? w : null;
      },
      5_000,
      'registry shows 2 busy slots',
    );
    expect(record.slots).toBe(2);
  });

  it('drain: finishes the current run and takes no new one', async () => {
    const a = await env.startWorker({ workerId: 'drain-a' });
    const first = await env.submit(sftSpec({ steps: 30, interval: 10 }));
    await eventually(async () => (await lastStep(first)) >= 2);
    await requestDrain(env.store, a.id, false);
    const second = await env.submit(sftSpec({ steps: 3 }));
    await eventually(async () => (await stateOf(first)) === 'succeeded', 10_000, 'first done');
    expect((await getWorker(env.store, a.id))?.draining).toBe(true);
    const b = await env.startWorker({ workerId: 'drain-b' });
    await eventually(async () => (await stateOf(second)) === 'succeeded', 10_000, 'second done');
    expect((await getRun(env.store, second))?.workerId).toBe(b.id);
    expect((await getTransitions(env.store, second)).map((t) => t.to)).toEqual([
      'queued',
      'running',
      'succeeded',
    ]);
  });

  it('drain with checkpointAndRelease: the run goes back to the queue and resumes elsewhere', async () => {
    const a = await env.startWorker({ workerId: 'release-a' });
    const runId = await env.submit(sftSpec({ steps: 60, interval: 5 }));
    await eventually(async () => (await lastStep(runId)) >= 7);
    await requestDrain(env.store, a.id, true);
    await eventually(async () => (await stateOf(runId)) === 'retrying', 10_000, 'released');
    const released = await getRun(env.store, runId);
    // The worker frees its slot once the job is back in the queue, just after the state change.
    await eventually(async () => a.runs().length === 0, 10_000, 'slot freed');
    await env.startWorker({ workerId: 'release-b' });
    await eventually(async () => (await stateOf(runId)) === 'succeeded', 15_000, 'resumed');
    const transitions = await getTransitions(env.store, runId);
    expect(transitions.map((t) => t.to)).toEqual([
      'queued',
      'running',
      'retrying',
      'running',
      'succeeded',
    ]);
    expect(transitions[2]?.reason).toBe('released by draining worker release-a');
    expect(transitions[3]?.workerId).toBe('release-b');
    const summary = (await readRunOutcome(env.store, runId)).summary;
    expect(summary?.resumedFrom).toBe(released?.checkpoint?.step);
    const steps = (await readSteps(env.store, runId)).map((s) => s.step);
    expect(steps).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
  });

  it('close (SIGTERM): checkpoints, hands the run back and stops within the grace period', async () => {
    const a = await env.startWorker({ workerId: 'term-a', shutdownGraceSeconds: 5 });
    const runId = await env.submit(sftSpec({ steps: 200, interval: 50 }));
    await eventually(async () => (await lastStep(runId)) >= 3);
    const started = Date.now();
    await a.close();
    expect(Date.now() - started).toBeLessThan(5_000);
    const run = await getRun(env.store, runId, { transitions: true });
    expect(run?.state).toBe('retrying');
    expect(run?.transitions?.at(-1)?.reason).toBe('worker term-a shutting down');
    expect(run?.checkpoint?.step).toBe(run?.lastStep);
    expect(await getWorker(env.store, 'term-a')).toBeNull();
    await env.startWorker({ workerId: 'term-b' });
    await eventually(async () => (await stateOf(runId)) === 'succeeded', 15_000, 'resumed');
    expect((await readSteps(env.store, runId, { limit: 1000 })).length).toBe(200);
  });
});
