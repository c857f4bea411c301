// kill -9 of a worker in the middle of a guardrail rollback (docs/guardrails.md "Rollback"): the
// real executors on embedded engines whose trainer diverges after step 6 (fixtures/kl-fault.ts),
// checkpointing every step. `kl-blowup` fires at step 8; the store takes the run back to the
// checkpoint of step 6 (the pointer moves back from 7, whose KL was already high) and the worker
// is caught restoring it (its trainer never finishes opening the checkpoint) and killed there.
// A second worker resumes from the rolled-back pointer in the rollback's generation, at half the
// learning rate, and finishes: every step is recorded once per generation, nothing is lost.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { getRun, getTransitions, readEvents, readRolledBackSteps, readSteps } from '@anneal/store';
import { GUARDED_GRPO, LEARNING_RATE } from './fixtures/kl-fault.ts';
import { type TestEnv, eventually, testEnv } from './helpers.ts';
import { type WorkerProcess, crashTestWorkers } from './process.ts';

let env: TestEnv;
const workers = crashTestWorkers(() => env);
const worker = (id: string) => workers.spawn(id, {}, 'guardrailGrpo');
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

describe('guardrail rollback, worker killed during it', () => {
  it('another worker resumes from the restored checkpoint; every step once per rollback count', async () => {
    const a = worker('guard-a');
    const runId = await env.submit(
      GUARDED_GRPO.replace('checkpointInterval: 2', 'checkpointInterval: 1'),
    );
    const rolledBack = await eventually(
      async () => {
        const run = await getRun(env.store, runId);
        return run?.guardrails?.rollbacks === 1 ? run : null;
      },
      120_000,
      'the rollback was recorded',
    ).catch(withOutput(a));
    // the store side is done: the pointer is back at 6; the worker is stuck restoring it
    expect(rolledBack.checkpoint?.step).toBe(6);
    expect(rolledBack.lastStep).toBe(6);
    a.child.kill('SIGKILL');
    expect(await a.exited).toBe('SIGKILL');

    const b = worker('guard-b');
    const run = await eventually(
      async () => {
        const r = await getRun(env.store, runId);
        return r?.state === 'succeeded' || r?.state === 'failed' ? r : null;
      },
      120_000,
      'b finished',
    ).catch(withOutput(b));
    expect(run.state).toBe('succeeded');
    expect(run.guardrails).toMatchObject({ rollbacks: 1, learningRateScale: 0.5 });
    expect(run.guardrails?.firings).toHaveLength(1);
    expect(run.guardrails?.firings[0]).toMatchObject({
      step: 8,
      restored: { step: 6 },
      rolledBackSteps: [7],
    });

    // One rollback (running -> running), then the kill's retry. On a loaded machine a live
    // worker may also lose its job lock (its event loop stalled past the lock): a retry, never
    // a failure of the run's.
    const history = await getTransitions(env.store, runId);
    const told = JSON.stringify(history.map((t) => [t.to, t.reason]));
    for (const t of history.filter((h) => h.to === 'retrying')) {
      expect(t.reason, told).not.toMatch(/attempt \d+\/\d+ failed/);
    }
    const rollbackAt = history.findIndex((t) => t.from === 'running' && t.to === 'running');
    expect(history[rollbackAt]?.reason, told).toMatch(
      /kl-blowup.*rolled back to the checkpoint at step 6/,
    );
    const after = history.slice(rollbackAt + 1).map((t) => t.to);
    expect(after.slice(0, 2), told).toEqual(['retrying', 'running']); // the kill's retry
    expect(after.at(-1), told).toBe('succeeded');
    expect(history.filter((t) => t.from === 'running' && t.to === 'running')).toHaveLength(1);
    const steps = await readSteps(env.store, runId);
    expect(steps.map((s) => [s.step, s.rollbacks ?? 0])).toEqual([
      ...[1, 2, 3, 4, 5, 6].map((s) => [s, 0]),
      ...[7, 8, 9, 10].map((s) => [s, 1]),
    ]);
    for (const s of steps.slice(6)) {
      expect(s.metrics['learning_rate']).toBeCloseTo(LEARNING_RATE / 2, 12);
    }
    const back = await readRolledBackSteps(env.store, runId);
    expect(back.map((s) => [s.step, s.rolledBack.fired])).toEqual([
      [7, false],
      [8, true],
    ]);
    const committed = (await readEvents(env.store, runId, '0', 10_000)).flatMap(({ event: e }) =>
      e.type === 'step:committed' ? [`${e.step}/${e.rollbacks ?? 0}`] : [],
    );
    expect(committed).toEqual([
      ...[1, 2, 3, 4, 5, 6, 7].map((s) => `${s}/0`),
      ...[7, 8, 9, 10].map((s) => `${s}/1`),
    ]);
  }, 300_000);
});
