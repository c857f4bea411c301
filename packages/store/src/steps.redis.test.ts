import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type TestStore, testSpec, testStore } from '../test/helpers.ts';
import { getCheckpoint, setCheckpoint } from './checkpoints.ts';
import { keys } from './context.ts';
import { readEvents, readEventsOf } from './events.ts';
import { createRun, getRun } from './runs.ts';
import { appendStep, committedSteps, readSteps } from './steps.ts';
import { startRun } from './transitions.ts';

let store: TestStore;
let runId: string;
beforeEach(async () => {
  store = await testStore();
  const result = await createRun(store.ctx, { tenant: 't', spec: testSpec('kind: grpo') });
  if (result.status !== 'created') throw new Error('create');
  runId = result.run.id;
});
afterEach(async () => {
  await store.cleanup();
});

describe('appendStep', () => {
  it('only accepts steps while the run is running', async () => {
    expect(await appendStep(store.ctx, runId, 1, { loss: 1 })).toEqual({
      status: 'not-running',
      state: 'queued',
    });
    expect(await appendStep(store.ctx, 'run_missing', 1, { loss: 1 })).toEqual({
      status: 'missing',
    });
  });

  it('ignores a repeated step number, even under concurrent commits', async () => {
    await startRun(store.ctx, runId, 'w1');
    expect((await appendStep(store.ctx, runId, 0, { loss: 2 })).status).toBe('committed');
    const racing = await Promise.all(
      Array.from({ length: 8 }, (_, i) => appendStep(store.ctx, runId, 1, { loss: i })),
    );
    expect(racing.filter((r) => r.status === 'committed')).toHaveLength(1);
    expect(await appendStep(store.ctx, runId, 0, { loss: 99 })).toEqual({ status: 'duplicate' });
    const steps = await readSteps(store.ctx, runId);
    expect(steps.map((s) => s.step)).toEqual([0, 1]);
    expect(steps[0]?.metrics).toEqual({ loss: 2 });
    const stepEvents = (await readEvents(store.ctx, runId)).filter(
      (e) => e.event.type === 'step:committed',
    );
    expect(stepEvents).toHaveLength(2);
    expect((await getRun(store.ctx, runId))?.lastStep).toBe(1);
  });

  it('reads history from a step, keeping only the requested names, in step order', async () => {
    await startRun(store.ctx, runId, 'w1');
    for (const step of [3, 1, 2, 10]) {
      await appendStep(store.ctx, runId, step, { reward: step / 10, grad_norm: null, kl: 0.001 });
    }
    const steps = await readSteps(store.ctx, runId, {
      fromStep: 2,
      names: ['reward', 'grad_norm'],
    });
    expect(steps.map((s) => s.step)).toEqual([2, 3, 10]);
    expect(steps[0]?.metrics).toEqual({ reward: 0.2, grad_norm: null });
    expect((await readSteps(store.ctx, runId, { limit: 2 })).map((s) => s.step)).toEqual([1, 2]);
    // numerically, not as the strings Redis holds ('10' < '2')
    expect(await committedSteps(store.ctx, runId)).toEqual([1, 2, 3, 10]);
    expect(await committedSteps(store.ctx, 'run_missing')).toEqual([]);
  });
});

describe('stored records', () => {
  it('a step record an older worker wrote fails naming its key, step and field', async () => {
    await startRun(store.ctx, runId, 'w1');
    await appendStep(store.ctx, runId, 1, { loss: 1 });
    // As an older worker wrote it: no `at`; the reader stops at it, naming the step.
    const k = keys(store.ctx.prefix);
    const key = k.steps(runId);
    await store.ctx.redis.hset(key, '2', JSON.stringify({ step: 2, metrics: { loss: 0.5 } }));
    await store.ctx.redis.zadd(k.stepIndex(runId), 2, '2');
    await expect(readSteps(store.ctx, runId)).rejects.toThrow(
      `stored record ${key} 2 field /at: Expected required property`,
    );
  });
});

describe('fencing', () => {
  it('refuses and counts step and checkpoint writes of an attempt that lost the run', async () => {
    const first = await startRun(store.ctx, runId, 'w1');
    if (first.status !== 'started') throw new Error('start');
    const fence = { attempt: first.attempt };
    expect((await appendStep(store.ctx, runId, 1, { loss: 1 }, fence)).status).toBe('committed');
    expect(await setCheckpoint(store.ctx, runId, { step: 1, path: '/a/1' }, fence)).toBe('saved');
    // w1 is presumed lost (its job lock expired); w2 takes the run over: attempt 2.
    const second = await startRun(store.ctx, runId, 'w2');
    expect(second).toMatchObject({ status: 'started', attempt: first.attempt + 1 });
    expect(await appendStep(store.ctx, runId, 2, { loss: 2 }, fence)).toEqual({
      status: 'fenced',
      attempt: first.attempt + 1,
      state: 'running',
    });
    expect(await setCheckpoint(store.ctx, runId, { step: 8, path: '/a/8' }, fence)).toBe('fenced');
    expect((await readSteps(store.ctx, runId)).map((s) => s.step)).toEqual([1]);
    expect(await getCheckpoint(store.ctx, runId)).toMatchObject({ step: 1, path: '/a/1' });
    expect(await store.ctx.redis.hget(`${store.prefix}:run:${runId}`, 'fencedWrites')).toBe('2');
    const owner = { attempt: first.attempt + 1 };
    expect((await appendStep(store.ctx, runId, 2, { loss: 2 }, owner)).status).toBe('committed');
    expect(await setCheckpoint(store.ctx, runId, { step: 2, path: '/b/2' }, owner)).toBe('saved');
  });
});

describe('events', () => {
  it('resumes after an event id and wakes a blocked reader on new events', async () => {
    const all = await readEvents(store.ctx, runId);
    expect(all).toHaveLength(1);
    const first = all[0]?.id ?? '';
    const reader = store.connection();
    const waiting = readEventsOf(reader, store.prefix, new Map([[runId, first]]), 5000).then(
      (byRun) => byRun.get(runId) ?? [],
    );
    await startRun(store.ctx, runId, 'w1');
    const woken = await waiting;
    expect(woken[0]?.event).toMatchObject({ type: 'run:state', from: 'queued', to: 'running' });
    await appendStep(store.ctx, runId, 1, { loss: 1 });
    const after = await readEvents(store.ctx, runId, woken[0]?.id);
    expect(after.map((e) => e.event.type)).toEqual(['step:committed']);
  });
});

describe('checkpoints', () => {
  it('keeps the latest pointer and never moves it backwards', async () => {
    expect(await getCheckpoint(store.ctx, runId)).toBeNull();
    expect(await setCheckpoint(store.ctx, runId, { step: 10, path: '/ckpt/10' })).toBe('saved');
    expect(await setCheckpoint(store.ctx, runId, { step: 5, path: '/ckpt/5' })).toBe('stale');
    expect(await getCheckpoint(store.ctx, runId)).toMatchObject({ step: 10, path: '/ckpt/10' });
    expect((await getRun(store.ctx, runId))?.checkpoint).toMatchObject({ step: 10 });
    const types = (await readEvents(store.ctx, runId)).map((e) => e.event.type);
    expect(types).toEqual(['run:state', 'checkpoint:saved']);
    await expect(setCheckpoint(store.ctx, 'run_missing', { step: 1, path: 'x' })).rejects.toThrow(
      /does not exist/,
    );
  });
});
