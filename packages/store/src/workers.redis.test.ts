import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ControlMessage } from '@anneal/protocol';
import { type TestStore, eventually, testSpec, testStore } from '../test/helpers.ts';
import { requestCancel, subscribeControl } from './control.ts';
import { createRun, getRun } from './runs.ts';
import {
  getWorker,
  heartbeatWorker,
  listWorkers,
  onlineWorkerCount,
  removeWorker,
  requestDrain,
} from './workers.ts';
import { isCancelRequested } from './transitions.ts';

let store: TestStore;
beforeEach(async () => {
  store = await testStore();
});
afterEach(async () => {
  await store.cleanup();
});

const beat = (id: string, pool = 'gpu') => ({
  id,
  pool,
  slots: 2,
  busy: 1,
  runs: ['run_x'],
  startedAt: new Date().toISOString(),
});

describe('worker registry', () => {
  it('lists live workers per pool and drops them when the heartbeat TTL expires', async () => {
    await heartbeatWorker(store.ctx, beat('w1'), 30);
    await heartbeatWorker(store.ctx, beat('w2', 'cpu'), 1);
    expect((await listWorkers(store.ctx)).map((w) => w.id)).toEqual(['w1', 'w2']);
    expect((await listWorkers(store.ctx, { pool: 'gpu' })).map((w) => w.id)).toEqual(['w1']);
    expect(await onlineWorkerCount(store.ctx, 'cpu', 1)).toBe(1);
    expect(await onlineWorkerCount(store.ctx, 'cpu', 1, new Date(Date.now() + 2000))).toBe(0);
    await eventually(async () => (await listWorkers(store.ctx)).length === 1, 5000);
    expect(await getWorker(store.ctx, 'w2')).toBeNull();
    await removeWorker(store.ctx, 'w1');
    expect(await listWorkers(store.ctx)).toEqual([]);
  });

  it('persists drain across heartbeats and tells the worker over pub/sub', async () => {
    const received: ControlMessage[] = [];
    const unsubscribe = await subscribeControl(store.connection(), store.prefix, (m) =>
      received.push(m),
    );
    expect(await requestDrain(store.ctx, 'ghost', false)).toBeNull();
    await heartbeatWorker(store.ctx, beat('w1'));
    const drained = await requestDrain(store.ctx, 'w1', true);
    expect(drained).toMatchObject({ draining: true, checkpointAndRelease: true });
    expect(await heartbeatWorker(store.ctx, beat('w1'))).toEqual({
      draining: true,
      checkpointAndRelease: true,
    });
    expect(await getWorker(store.ctx, 'w1')).toMatchObject({ draining: true });
    await eventually(() => received.length === 1);
    expect(received[0]).toEqual({ type: 'drain', workerId: 'w1', checkpointAndRelease: true });
    await unsubscribe();
  });

  it('publishes cancel and flags the run', async () => {
    const created = await createRun(store.ctx, { tenant: 't', spec: testSpec('kind: sft') });
    if (created.status !== 'created') throw new Error('create');
    const received: ControlMessage[] = [];
    const invalid: string[] = [];
    await subscribeControl(
      store.connection(),
      store.prefix,
      (m) => received.push(m),
      (raw) => invalid.push(raw),
    );
    expect(await requestCancel(store.ctx, 'run_missing', 'x')).toBe(false);
    expect(await requestCancel(store.ctx, created.run.id, 'user asked')).toBe(true);
    await store.redis.publish(`${store.prefix}:control`, '{"type":"bogus"}');
    await eventually(() => received.length === 1 && invalid.length === 1);
    expect(received[0]).toEqual({ type: 'cancel', runId: created.run.id, reason: 'user asked' });
    expect(await isCancelRequested(store.ctx, created.run.id)).toBe(true);
    expect((await getRun(store.ctx, created.run.id))?.cancelRequested).toBe(true);
  });
});
