import type { GuardrailFiring } from '@anneal/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type TestStore, testSpec, testStore } from '../test/helpers.ts';
import { getCheckpoint, setCheckpoint } from './checkpoints.ts';
import { readEvents } from './events.ts';
import {
  readRolledBackSteps,
  recordGuardrailFirings,
  rollbackRun,
  setSafeCheckpoint,
} from './guardrails.ts';
import { createRun, getRun, getTransitions } from './runs.ts';
import { appendStep, readSteps } from './steps.ts';
import { startRun } from './transitions.ts';
import { readRunUsage, readTenantUsage } from './usage.ts';
import { NO_USAGE, priceUsage, usagePeriods } from '@anneal/protocol';

let store: TestStore;
let runId: string;
let attempt: number;
beforeEach(async () => {
  store = await testStore();
  const result = await createRun(store.ctx, { tenant: 't', spec: testSpec('kind: grpo') });
  if (result.status !== 'created') throw new Error('create');
  runId = result.run.id;
  const started = await startRun(store.ctx, runId, 'w1');
  if (started.status !== 'started') throw new Error('start');
  attempt = started.attempt;
});
afterEach(async () => {
  await store.cleanup();
});

const rule = {
  name: 'kl-above',
  metric: 'train_inference_kl',
  when: 'above' as const,
  value: 0.5,
  forSteps: 2,
  action: 'rollback' as const,
  origin: 'spec' as const,
};
const firing = (step: number, action: GuardrailFiring['action']): GuardrailFiring => ({
  step,
  rule: { ...rule, action },
  values: [{ step, value: 2 }],
  action,
  reason: `kl-above at step ${step}`,
  at: new Date().toISOString(),
});

async function commit(steps: number[], rollbacks?: number) {
  for (const step of steps) {
    const previous = step > 1 ? { previous: step - 1 } : {};
    const options = { attempt, ...previous, ...(rollbacks && { rollbacks }) };
    expect((await appendStep(store.ctx, runId, step, { kl: step }, options)).status).toBe(
      'committed',
    );
  }
}

const firedUsage = {
  ...NO_USAGE,
  promptTokens: 300,
  completionTokens: 40,
  trainedTokens: 40,
  toolCalls: 2,
};
const firedCost = priceUsage(firedUsage, {
  promptPerMillionTokens: 1,
  completionPerMillionTokens: 2,
  trainedPerMillionTokens: 3,
  perToolCall: 0.01,
  perJudgeCall: 0,
  scoredPerMillionTokens: 0,
  perSlotHour: 0,
});

describe('guardrail firings', () => {
  it('are recorded once per key, on the stream and the run record', async () => {
    const first = await recordGuardrailFirings(store.ctx, runId, '0:3', [firing(3, 'notify')], {
      attempt,
    });
    expect(first).toEqual({ status: 'recorded' });
    const again = await recordGuardrailFirings(store.ctx, runId, '0:3', [firing(3, 'notify')], {
      attempt,
    });
    expect(again).toEqual({ status: 'duplicate' });
    const events = (await readEvents(store.ctx, runId)).filter(
      (e) => e.event.type === 'guardrail:fired',
    );
    expect(events).toHaveLength(1);
    const run = await getRun(store.ctx, runId);
    expect(run?.guardrails?.firings.map((f) => [f.step, f.action])).toEqual([[3, 'notify']]);
    const stale = await recordGuardrailFirings(store.ctx, runId, '0:4', [firing(4, 'notify')], {
      attempt: attempt + 1,
    });
    expect(stale.status).toBe('fenced');
  });

  it('of a stop meter the usage of the step that fired, once however often they are sent', async () => {
    const usage = { tenant: 't', step: { usage: firedUsage, costUsd: firedCost }, at: new Date() };
    const stop = [firing(2, 'stop')];
    expect(await recordGuardrailFirings(store.ctx, runId, '0:2', stop, { attempt }, usage)).toEqual(
      { status: 'recorded' },
    );
    expect(await recordGuardrailFirings(store.ctx, runId, '0:2', stop, { attempt }, usage)).toEqual(
      { status: 'duplicate' },
    );
    const metered = await readRunUsage(store.ctx, runId);
    expect(metered.usage).toEqual(firedUsage);
    expect(metered.costUsd.total).toBeCloseTo(firedCost.total, 12);
  });
});

describe('rollbackRun', () => {
  it('takes back the steps above the restored checkpoint, keeps them marked, moves the pointer back', async () => {
    await commit([1, 2, 3, 4, 5]);
    await setCheckpoint(store.ctx, runId, { step: 2, path: '/c/2' }, { attempt });
    expect(
      await setSafeCheckpoint(store.ctx, runId, { step: 2, path: '/c/2' }, { attempt }),
    ).toEqual({
      status: 'recorded',
    });
    await setCheckpoint(store.ctx, runId, { step: 4, path: '/c/4' }, { attempt });
    const input = {
      key: '0:6',
      firing: {
        ...firing(6, 'rollback'),
        restored: { step: 2, path: '/c/2' },
        rollbacks: 1,
        learningRateScale: 0.5,
      },
      fired: { step: 6, metrics: { kl: null }, at: new Date().toISOString() },
      // the step that fired sampled and trained: metered with the rollback
      usage: { tenant: 't', step: { usage: firedUsage, costUsd: firedCost }, at: new Date() },
      workerId: 'w1',
    };
    const before = await readRunUsage(store.ctx, runId);
    const result = await rollbackRun(store.ctx, runId, input, { attempt });
    expect(result).toEqual({ status: 'rolled-back', rolledBackSteps: [3, 4, 5] });
    // sent again (a reconnect): nothing more happens, its usage not metered twice
    expect(await rollbackRun(store.ctx, runId, input, { attempt })).toEqual({
      status: 'duplicate',
    });
    const after = await readRunUsage(store.ctx, runId);
    expect(after.usage).toEqual({
      ...before.usage,
      promptTokens: before.usage.promptTokens + 300,
      completionTokens: before.usage.completionTokens + 40,
      trainedTokens: before.usage.trainedTokens + 40,
      toolCalls: before.usage.toolCalls + 2,
    });
    expect(after.costUsd.total - before.costUsd.total).toBeCloseTo(firedCost.total, 12);
    const month = await readTenantUsage(store.ctx, 't', usagePeriods(new Date()).month);
    expect(month.usage.completionTokens).toBe(after.usage.completionTokens);

    expect((await readSteps(store.ctx, runId)).map((s) => s.step)).toEqual([1, 2]);
    expect(await getCheckpoint(store.ctx, runId)).toMatchObject({ step: 2, path: '/c/2' });
    const run = await getRun(store.ctx, runId);
    expect(run?.lastStep).toBe(2);
    expect(run?.guardrails).toMatchObject({
      rollbacks: 1,
      learningRateScale: 0.5,
      safeCheckpoint: { step: 2, path: '/c/2' },
    });
    expect(run?.guardrails?.firings[0]).toMatchObject({ rolledBackSteps: [3, 4, 5], rollbacks: 1 });
    const transitions = await getTransitions(store.ctx, runId);
    expect(transitions.at(-1)).toMatchObject({
      from: 'running',
      to: 'running',
      reason: 'kl-above at step 6',
    });

    // the re-run steps commit again, after 1 rollback; the taken-back ones stay as they were
    await commit([3, 4], 1);
    const steps = await readSteps(store.ctx, runId);
    expect(steps.map((s) => [s.step, s.rollbacks ?? 0])).toEqual([
      [1, 0],
      [2, 0],
      [3, 1],
      [4, 1],
    ]);
    const back = await readRolledBackSteps(store.ctx, runId);
    expect(back.map((s) => [s.step, s.rolledBack.rollbacks, s.rolledBack.fired])).toEqual([
      [3, 1, false],
      [4, 1, false],
      [5, 1, false],
      [6, 1, true],
    ]);
    expect(back[0]?.metrics).toEqual({ kl: 3 });
    const committed = (await readEvents(store.ctx, runId))
      .map((e) => e.event)
      .filter((e) => e.type === 'step:committed')
      .map((e) => `${e.step}/${e.rollbacks ?? 0}`);
    expect(committed).toEqual(['1/0', '2/0', '3/0', '4/0', '5/0', '3/1', '4/1']);
  });

  it('to the starting weights: no checkpoint pointer left; a stale or fenced rollback is refused', async () => {
    await commit([1]);
    const input = (rollbacks: number) => ({
      key: `0:2:${rollbacks}`,
      firing: { ...firing(2, 'rollback'), restored: { step: 0, path: null }, rollbacks },
      fired: { step: 2, metrics: {}, at: new Date().toISOString() },
    });
    expect((await rollbackRun(store.ctx, runId, input(2), { attempt })).status).toBe('stale');
    expect((await rollbackRun(store.ctx, runId, input(1), { attempt: attempt + 1 })).status).toBe(
      'fenced',
    );
    expect((await rollbackRun(store.ctx, runId, input(1), { attempt })).status).toBe('rolled-back');
    expect(await getCheckpoint(store.ctx, runId)).toBeNull();
    const run = await getRun(store.ctx, runId);
    expect(run?.lastStep).toBeUndefined();
    expect(run?.guardrails?.safeCheckpoint).toEqual({ step: 0, path: null });
    expect(await readSteps(store.ctx, runId)).toEqual([]);
  });
});
