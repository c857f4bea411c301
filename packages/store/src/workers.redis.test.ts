import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ControlMessage } from '@anneal/protocol';
import { type TestStore, eventually, testSpec, testStore } from '../test/helpers.ts';
import { requestCancel, subscribeControl } from './control.ts';
import { createRun, getRun } from './runs.ts';
import {
  getWorker,
  heartbeatWorker,
  knownWorkers,
  listWorkers,
  onlineWorkerCount,
  removeWorker,
  requestDrain,
  WORKER_INDEX_RETENTION_MS,
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

  it('keeps knowing a worker whose record expired until a clean shutdown or the retention', async () => {
    const now = Date.now();
    const ago = (ms: number) => new Date(now - ms);
    await heartbeatWorker(store.ctx, beat('fresh'), 30, ago(1_000));
    await heartbeatWorker(store.ctx, beat('crashed'), 1, ago(10 * 60_000));
    await heartbeatWorker(store.ctx, beat('ancient'), 1, ago(WORKER_INDEX_RETENTION_MS + 60_000));
    await heartbeatWorker(store.ctx, beat('elsewhere', 'cpu'), 30, ago(1_000));
    // the crashed worker's record expires (TTL 1 s) but it stays known, with its last heartbeat
    await eventually(async () => (await getWorker(store.ctx, 'crashed')) === null);
    const known = await knownWorkers(store.ctx, 'gpu', new Date(now));
    expect(known).toEqual([
      { id: 'crashed', pool: 'gpu', lastHeartbeatMs: now - 10 * 60_000 },
      { id: 'fresh', pool: 'gpu', lastHeartbeatMs: now - 1_000 },
    ]);
    // a clean shutdown forgets the worker at once
    await removeWorker(store.ctx, 'fresh');
    expect((await knownWorkers(store.ctx, 'gpu', new Date(now))).map((w) => w.id)).toEqual([
      'crashed',
    ]);
    // its record expired, so only a caller naming the pool can take it out of the index
    await removeWorker(store.ctx, 'crashed', 'gpu');
    expect(await knownWorkers(store.ctx, 'gpu', new Date(now))).toEqual([]);
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
