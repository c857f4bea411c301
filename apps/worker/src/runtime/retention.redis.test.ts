// Retention against a real Redis after a guardrail rollback: the checkpoints of the line the
// rollback took back sit above the resume point and are retired first; keepLast counts the
// newest of the current line, not the taken-back ones.
import { afterEach, beforeEach, expect, it } from 'vitest';
import { appendStep, listCheckpoints, rollbackRun, setCheckpoint, startRun } from '@anneal/store';
import { type TestEnv, testEnv } from '../../test/helpers.ts';
import { retireCheckpoints } from './retention.ts';

let env: TestEnv;
beforeEach(async () => {
  env = await testEnv();
});
afterEach(async () => {
  await env.cleanup();
});

it('retires a rolled-back line first and keeps the newest of the current one', async () => {
  const runId = await env.submit('kind: sft\nsteps: 10', { enqueue: false });
  const started = await startRun(env.store, runId, 'w1');
  if (started.status !== 'started') throw new Error('start');
  const fence = { attempt: started.attempt };
  const checkpoint = async (step: number) =>
    expect(await setCheckpoint(env.store, runId, { step, path: `p${step}` }, fence)).toBe('saved');
  for (let step = 1; step <= 6; step++) {
    await appendStep(env.store, runId, step, { loss: 1 }, fence);
    if (step % 2 === 0) await checkpoint(step);
  }
  const now = new Date().toISOString();
  const rolled = await rollbackRun(
    env.store,
    runId,
    {
      key: '0:7',
      firing: {
        step: 7,
        rule: {
          name: 'loss-nonfinite',
          metric: 'loss',
          when: 'nonFinite',
          forSteps: 1,
          action: 'rollback',
          origin: 'spec',
        },
        values: [{ step: 7, value: null }],
        action: 'rollback',
        reason: 'non-finite loss at step 7',
        at: now,
        restored: { step: 2, path: 'p2' },
        rollbacks: 1,
        learningRateScale: 0.5,
      },
      fired: { step: 7, metrics: { loss: null }, at: now },
    },
    fence,
  );
  expect(rolled.status).toBe('rolled-back');
  await appendStep(env.store, runId, 3, { loss: 1 }, fence);
  await checkpoint(3);
  // steps 4 and 6 belong to the line the rollback took back; 2 is the safe checkpoint
  const retired = await retireCheckpoints(env.store, runId, { keepLast: 1 }, fence);
  expect(retired.map((r) => r.step)).toEqual([4, 6]);
  const all = { status: 'all', order: 'asc', limit: 100 } as const;
  const { checkpoints } = await listCheckpoints(env.store, runId, all);
  expect(checkpoints.map((c) => [c.step, c.status])).toEqual([
    [2, 'kept'],
    [3, 'kept'],
    [4, 'deleted'],
    [6, 'deleted'],
  ]);
});
