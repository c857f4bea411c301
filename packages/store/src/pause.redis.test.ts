import { Worker } from 'bullmq';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ControlMessage } from '@anneal/protocol';
import { type TestStore, eventually, testSpec, testStore } from '../test/helpers.ts';
import { keys } from './context.ts';
import { subscribeControl } from './control.ts';
import { readEvents } from './events.ts';
import {
  markPauseRequested,
  pauseAtBoundary,
  readStopRequests,
  requestPause,
  requeueRun,
  resumeRun,
} from './pause.ts';
import { type PoolQueues, bullPrefix, createPoolQueues, enqueueRun } from './queues.ts';
import { createRun, getRun, listOutbox } from './runs.ts';
import { tenantRunningCount } from './tenants.ts';
import { finishRun, startRun, transitionRun } from './transitions.ts';

let store: TestStore;
let queues: PoolQueues;
beforeEach(async () => {
  store = await testStore();
  queues = createPoolQueues(store.redis, store.prefix);
});
afterEach(async () => {
  await queues.close();
  await store.cleanup();
});

async function newRun(): Promise<string> {
  const result = await createRun(store.ctx, { tenant: 'acme', spec: testSpec('kind: sft') });
  if (result.status !== 'created') throw new Error('create');
  await enqueueRun(queues.get('default'), result.run);
  return result.run.id;
}

const user = { by: 'user' as const, reason: 'alice wants the GPU back' };
const waiting = (id: string) => store.redis.zscore(keys(store.prefix).poolWaiting('default'), id);

describe('pause and resume in the store', () => {
  it('pauses a queued run at once (its job goes), idempotently, and resumes it with a new job', async () => {
    const id = await newRun();
    expect(await requestPause(store.ctx, queues, id, user)).toEqual({
      status: 'paused',
      already: false,
    });
    expect(await queues.get('default').getJobState(id)).toBe('unknown');
    expect(await waiting(id)).toBeNull();
    expect(await getRun(store.ctx, id)).toMatchObject({
      state: 'paused',
      pause: { by: 'user', reason: user.reason },
    });
    expect(await requestPause(store.ctx, queues, id, user)).toEqual({
      status: 'paused',
      already: true,
    });

    expect(await resumeRun(store.ctx, queues, id, 'resumed by alice')).toMatchObject({
      status: 'queued',
      run: { id, state: 'queued', transitions: expect.any(Array) },
    });
    const run = await getRun(store.ctx, id, { transitions: true });
    expect(run?.state).toBe('queued');
    expect(run?.pause).toBeUndefined();
    expect(run?.transitions?.slice(1).map((t) => [t.from, t.to, t.by, t.reason])).toEqual([
      ['queued', 'paused', 'user', `paused by user: ${user.reason}`],
      ['paused', 'queued', undefined, 'resumed by alice'],
    ]);
    expect(await queues.get('default').getJobState(id)).toBe('prioritized');
    expect(await waiting(id)).not.toBeNull();
    expect(await listOutbox(store.ctx)).not.toContain(id);
    expect(await resumeRun(store.ctx, queues, id, 'again')).toEqual({
      status: 'active',
      state: 'queued',
    });
    const events = await readEvents(store.ctx, id);
    expect(events.map((e) => e.event.type === 'run:state' && [e.event.to, e.event.by])).toEqual([
      ['queued', undefined],
      ['paused', 'user'],
      ['queued', undefined],
    ]);
  });

  it('asks the worker of a running run, which pauses it at the boundary and frees its slot', async () => {
    const id = await newRun();
    const started = await startRun(store.ctx, id, 'w1');
    if (started.status !== 'started') throw new Error('start');
    const messages: ControlMessage[] = [];
    const unsubscribe = await subscribeControl(store.connection(), store.prefix, (m) =>
      messages.push(m),
    );
    expect(await requestPause(store.ctx, queues, id, user)).toEqual({ status: 'requested' });
    await eventually(() => messages.length > 0);
    expect(messages[0]).toEqual({
      type: 'pause',
      runId: id,
      reason: `paused by user: ${user.reason}`,
    });
    await unsubscribe();
    // A second request (a guardrail) keeps the first cause.
    await requestPause(store.ctx, queues, id, { by: 'guardrail', reason: 'kl' });
    expect((await readStopRequests(store.ctx, id)).pause).toMatchObject({ by: 'user' });
    expect(await tenantRunningCount(store.ctx, 'acme')).toBe(1);

    // Another attempt's worker may not pause it.
    expect(await pauseAtBoundary(store.ctx, id, { workerId: 'w0', attempt: 7 })).toEqual({
      status: 'conflict',
      state: 'running',
    });
    expect(
      await pauseAtBoundary(store.ctx, id, { workerId: 'w1', attempt: started.attempt }),
    ).toMatchObject({ status: 'ok', from: 'running', to: 'paused' });
    expect(await tenantRunningCount(store.ctx, 'acme')).toBe(0);
    expect(await getRun(store.ctx, id)).toMatchObject({
      state: 'paused',
      workerId: 'w1',
      pause: { by: 'user' },
    });
  });

  it('lets a resume withdraw a pause the worker has not acted on yet', async () => {
    const id = await newRun();
    const started = await startRun(store.ctx, id, 'w1');
    if (started.status !== 'started') throw new Error('start');
    await requestPause(store.ctx, queues, id, user);
    expect(await resumeRun(store.ctx, queues, id, 'changed my mind')).toEqual({
      status: 'withdrawn',
      state: 'running',
    });
    expect(
      await pauseAtBoundary(store.ctx, id, { workerId: 'w1', attempt: started.attempt }),
    ).toEqual({ status: 'withdrawn' });
    expect((await getRun(store.ctx, id))?.state).toBe('running');
  });

  it('records a pause the run asks for itself only in the attempt that holds it', async () => {
    const id = await newRun();
    const started = await startRun(store.ctx, id, 'w1');
    if (started.status !== 'started') throw new Error('start');
    const budget = { by: 'budget' as const, reason: 'run budget of $5 spent' };
    expect(await markPauseRequested(store.ctx, id, budget, { attempt: 99 })).toBe('fenced');
    expect((await readStopRequests(store.ctx, id)).pause).toBeNull();
    expect(await markPauseRequested(store.ctx, id, budget, { attempt: started.attempt })).toBe(
      'requested',
    );
    expect(await markPauseRequested(store.ctx, id, budget, { attempt: started.attempt })).toBe(
      'pending',
    );
    await pauseAtBoundary(store.ctx, id, { workerId: 'w1', attempt: started.attempt });
    const run = await getRun(store.ctx, id, { transitions: true });
    expect(run?.transitions?.at(-1)).toMatchObject({
      to: 'paused',
      by: 'budget',
      reason: 'paused by budget: run budget of $5 spent',
    });
    expect(await markPauseRequested(store.ctx, id, budget, { attempt: started.attempt })).toBe(
      'not-running',
    );
  });

  it('reports a finished or missing run, and cancels a paused one', async () => {
    const done = await newRun();
    await startRun(store.ctx, done, 'w1');
    await finishRun(store.ctx, done, { state: 'succeeded', reason: 'ok' }, 'w1');
    expect(await requestPause(store.ctx, queues, done, user)).toEqual({
      status: 'finished',
      state: 'succeeded',
    });
    expect(await resumeRun(store.ctx, queues, done, 'x')).toEqual({
      status: 'finished',
      state: 'succeeded',
    });
    expect(await requestPause(store.ctx, queues, 'run_nope', user)).toEqual({ status: 'missing' });

    const id = await newRun();
    await requestPause(store.ctx, queues, id, user);
    expect(await transitionRun(store.ctx, id, { to: 'running', reason: 'x' })).toEqual({
      status: 'illegal',
      state: 'paused',
    });
    expect(
      await transitionRun(store.ctx, id, { to: 'cancelled', from: ['paused'], reason: 'bye' }),
    ).toMatchObject({ status: 'ok' });
    const cancelled = await getRun(store.ctx, id);
    expect(cancelled?.state).toBe('cancelled');
    expect(cancelled?.pause).toBeUndefined();
  });

  it('requeues over a finished job, and waits while a worker still holds the old one', async () => {
    const queue = queues.get('default');
    const run = { id: 'run_requeue', priority: 50 };
    await enqueueRun(queue, run);
    expect(await requeueRun(queue, run)).toBe('present');
    let finish = () => {};
    const held = new Promise<void>((resolve) => (finish = resolve));
    let taken = () => {};
    const active = new Promise<void>((resolve) => (taken = resolve));
    const worker = new Worker(
      queue.name,
      async () => {
        taken();
        await held;
      },
      { connection: store.connection(), prefix: bullPrefix(store.prefix) },
    );
    try {
      await active;
      expect(await requeueRun(queue, run)).toBe('busy');
      await worker.pause(true); // no new job for it once this one is done
      finish();
      await eventually(async () => (await queue.getJobState(run.id)) === 'completed');
      expect(await requeueRun(queue, run)).toBe('added');
      expect(await queue.getJobState(run.id)).toBe('prioritized');
    } finally {
      finish();
      await worker.close();
    }
  });
});
