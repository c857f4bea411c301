import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type TestStore, testSpec, testStore } from '../test/helpers.ts';
import { setCheckpoint } from './checkpoints.ts';
import { readEvents } from './events.ts';
import { createRun, getRun } from './runs.ts';
import { setTenantLimits, tenantRunningCount, oldestWaiting } from './tenants.ts';
import { finishRun, releaseRun, startRun, transitionRun } from './transitions.ts';

let store: TestStore;
beforeEach(async () => {
  store = await testStore();
});
afterEach(async () => {
  await store.cleanup();
});

async function newRun(tenant = 'acme'): Promise<string> {
  const result = await createRun(store.ctx, { tenant, spec: testSpec('kind: sft') });
  if (result.status !== 'created') throw new Error('create');
  return result.run.id;
}

describe('transitionRun', () => {
  it('records each transition with time, reason and an event', async () => {
    const id = await newRun();
    expect(await startRun(store.ctx, id, 'w1')).toMatchObject({ status: 'started', attempt: 1 });
    const done = await finishRun(
      store.ctx,
      id,
      { state: 'failed', reason: 'trainer error', error: 'HTTP 500' },
      'w1',
    );
    expect(done).toMatchObject({ status: 'ok', from: 'running', to: 'failed' });
    const run = await getRun(store.ctx, id, { transitions: true });
    expect(run).toMatchObject({ state: 'failed', error: 'HTTP 500', workerId: 'w1', attempt: 1 });
    expect(run?.endedAt).toBeDefined();
    expect(run?.startedAt).toBeDefined();
    expect(run?.transitions?.map((t) => [t.from, t.to, t.reason])).toEqual([
      [null, 'queued', 'submitted'],
      ['queued', 'running', 'started on worker w1'],
      ['running', 'failed', 'trainer error'],
    ]);
    const events = await readEvents(store.ctx, id);
    expect(events.map((e) => e.event.type === 'run:state' && e.event.to)).toEqual([
      'queued',
      'running',
      'failed',
    ]);
  });

  it('rejects illegal transitions and leaves the run unchanged', async () => {
    const id = await newRun();
    expect(await transitionRun(store.ctx, id, { to: 'succeeded', reason: 'x' })).toEqual({
      status: 'illegal',
      state: 'queued',
    });
    await transitionRun(store.ctx, id, { to: 'cancelled', reason: 'user' });
    expect(await transitionRun(store.ctx, id, { to: 'running', reason: 'x' })).toEqual({
      status: 'illegal',
      state: 'cancelled',
    });
    expect(await startRun(store.ctx, id, 'w1')).toEqual({
      status: 'not-startable',
      state: 'cancelled',
    });
    expect((await getRun(store.ctx, id, { transitions: true }))?.transitions).toHaveLength(2);
    expect(await transitionRun(store.ctx, 'run_nope', { to: 'running', reason: 'x' })).toEqual({
      status: 'missing',
    });
  });

  it('compare-and-set: a finish only applies from the expected state', async () => {
    const id = await newRun();
    expect(await finishRun(store.ctx, id, { state: 'failed', reason: 'x' })).toEqual({
      status: 'conflict',
      state: 'queued',
    });
  });

  it('takes over a run whose job BullMQ re-delivered (previous worker lost)', async () => {
    const id = await newRun();
    await startRun(store.ctx, id, 'w1');
    expect(await startRun(store.ctx, id, 'w2')).toMatchObject({ status: 'started', attempt: 2 });
    const run = await getRun(store.ctx, id, { transitions: true });
    expect(run?.transitions?.slice(-2).map((t) => [t.from, t.to, t.reason])).toEqual([
      ['running', 'retrying', 'worker w1 lost (job lock expired)'],
      ['retrying', 'running', 'started on worker w2'],
    ]);
  });

  it('retrying resumes on another worker and counts attempts', async () => {
    const id = await newRun();
    await startRun(store.ctx, id, 'w1');
    expect(await releaseRun(store.ctx, id, 'worker w1 lost')).toMatchObject({
      status: 'ok',
      to: 'retrying',
    });
    expect(await oldestWaiting(store.ctx, 'default')).toMatchObject({ runId: id });
    expect(await startRun(store.ctx, id, 'w2')).toMatchObject({ status: 'started', attempt: 2 });
    expect(await oldestWaiting(store.ctx, 'default')).toBeNull();
    expect((await getRun(store.ctx, id))?.workerId).toBe('w2');
  });
});

describe('startRun replies with the record the start left', () => {
  it('carries the new attempt, owner, spec and the checkpoint of the attempt before', async () => {
    const id = await newRun();
    const first = await startRun(store.ctx, id, 'w1');
    if (first.status !== 'started') throw new Error('start');
    expect(first.run).toMatchObject({ state: 'running', attempt: 1, workerId: 'w1' });
    expect(first.run.checkpoint).toBeUndefined();
    expect(await setCheckpoint(store.ctx, id, { step: 7, path: '/ck/7' }, { attempt: 1 })).toBe(
      'saved',
    );
    await releaseRun(store.ctx, id, 'worker w1 lost');
    await store.ctx.redis.hset(`${store.ctx.prefix}:run:${id}`, 'cancelRequested', '1');

    const second = await startRun(store.ctx, id, 'w2');
    if (second.status !== 'started') throw new Error('restart');
    // What the script wrote in the same call, not the hash before it: a stale read would say
    // retrying, attempt 1, worker w1.
    expect(second.attempt).toBe(2);
    expect(second.run).toMatchObject({
      id,
      tenant: 'acme',
      pool: 'default',
      kind: 'sft',
      state: 'running',
      attempt: 2,
      workerId: 'w2',
      cancelRequested: true,
      checkpoint: { step: 7, path: '/ck/7' },
    });
    expect(second.run.waitingReason).toBeUndefined();
    expect(second.run).toEqual(await getRun(store.ctx, id));
  });

  it('names the tenant and pool keys as keys() does, in the script or from the caller', async () => {
    const id = await newRun();
    expect(await oldestWaiting(store.ctx, 'default')).toMatchObject({ runId: id });
    const started = await startRun(store.ctx, id, 'w1'); // no owner given: the script names them
    if (started.status !== 'started') throw new Error('start');
    expect(await tenantRunningCount(store.ctx, 'acme')).toBe(1);
    expect(await oldestWaiting(store.ctx, 'default')).toBeNull();
    const done = await finishRun(
      store.ctx,
      id,
      { state: 'succeeded', reason: 'done' },
      'w1',
      started.run,
    );
    expect(done).toMatchObject({ status: 'ok', from: 'running', to: 'succeeded' });
    expect(done.status === 'ok' && done.run).toBe(undefined);
    expect(await tenantRunningCount(store.ctx, 'acme')).toBe(0);
  });
});

describe('tenant concurrency cap', () => {
  it('blocks starts beyond the cap with a waiting reason, and frees the slot on finish', async () => {
    await setTenantLimits(store.ctx, 'acme', { maxConcurrentRuns: 1 });
    const first = await newRun();
    const second = await newRun();
    const other = await newRun('beta');
    expect((await startRun(store.ctx, first, 'w1')).status).toBe('started');
    const blocked = await startRun(store.ctx, second, 'w2');
    expect(blocked).toEqual({
      status: 'blocked',
      reason: "tenant 'acme' is at its limit of 1 concurrently running runs",
    });
    expect(await getRun(store.ctx, second)).toMatchObject({
      state: 'queued',
      waitingReason: blocked.status === 'blocked' ? blocked.reason : '',
    });
    expect((await startRun(store.ctx, other, 'w3')).status).toBe('started');
    expect(await tenantRunningCount(store.ctx, 'acme')).toBe(1);

    await finishRun(store.ctx, first, { state: 'succeeded', reason: 'done' });
    expect(await tenantRunningCount(store.ctx, 'acme')).toBe(0);
    expect((await startRun(store.ctx, second, 'w2')).status).toBe('started');
    expect((await getRun(store.ctx, second))?.waitingReason).toBeUndefined();
  });
});
