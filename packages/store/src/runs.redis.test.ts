import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type TestStore, testSpec, testStore } from '../test/helpers.ts';
import { getRunView, runViewJson, runViewResource } from './run-view.ts';
import { clearOutbox, createRun, getRun, listOutbox, listRuns, listWaitingRuns } from './runs.ts';
import { setCheckpoint } from './checkpoints.ts';
import { setTenantLimits } from './tenants.ts';
import { releaseRun, startRun } from './transitions.ts';
import { heartbeatWorker } from './workers.ts';
import { transitionRun } from './transitions.ts';

let store: TestStore;
beforeEach(async () => {
  store = await testStore();
});
afterEach(async () => {
  await store.cleanup();
});

describe('createRun / getRun', () => {
  it('stores a queued run with its first transition', async () => {
    const result = await createRun(store.ctx, {
      tenant: 'acme',
      spec: testSpec('kind: grpo\nlabels: {team: a}'),
    });
    expect(result.status).toBe('created');
    if (result.status !== 'created') return;
    const run = await getRun(store.ctx, result.run.id, { transitions: true });
    expect(run).toMatchObject({
      tenant: 'acme',
      kind: 'grpo',
      state: 'queued',
      pool: 'default',
      priority: 50,
      labels: { team: 'a' },
      attempt: 0,
      cancelRequested: false,
    });
    expect(run?.transitions).toEqual([
      { from: null, to: 'queued', at: run?.createdAt, reason: 'submitted' },
    ]);
    expect((run?.spec as { rollout: { groupSize: number } }).rollout.groupSize).toBe(8);
    expect(await listWaitingRuns(store.ctx, 'default')).toEqual([result.run.id]);
    expect(await listOutbox(store.ctx)).toEqual([result.run.id]);
    expect(await listOutbox(store.ctx, 60_000)).toEqual([]);
    await clearOutbox(store.ctx);
    expect(await listOutbox(store.ctx)).toEqual([result.run.id]);
    await clearOutbox(store.ctx, 'run_other', result.run.id);
    expect(await listOutbox(store.ctx)).toEqual([]);
    expect(result.run).toEqual(await getRun(store.ctx, result.run.id));
  });

  it('hides runs of other tenants', async () => {
    const result = await createRun(store.ctx, { tenant: 'acme', spec: testSpec('kind: sft') });
    if (result.status !== 'created') throw new Error('create');
    expect(await getRun(store.ctx, result.run.id, { tenant: 'other' })).toBeNull();
    expect(await getRun(store.ctx, result.run.id, { tenant: 'acme' })).not.toBeNull();
    expect(await getRun(store.ctx, 'run_00000000000000000000000000')).toBeNull();
  });
});

describe('idempotency keys', () => {
  it('returns the same run for the same key and body, and a conflict for another body', async () => {
    const spec = testSpec('kind: sft');
    const first = await createRun(store.ctx, {
      tenant: 'acme',
      spec,
      idempotency: { key: 'k1', bodyHash: 'h1' },
    });
    const again = await createRun(store.ctx, {
      tenant: 'acme',
      spec,
      idempotency: { key: 'k1', bodyHash: 'h1' },
    });
    const other = await createRun(store.ctx, {
      tenant: 'acme',
      spec,
      idempotency: { key: 'k1', bodyHash: 'h2' },
    });
    expect(first.status).toBe('created');
    expect(again.status).toBe('existing');
    if (first.status !== 'created' || again.status !== 'existing') return;
    expect(again.run.id).toBe(first.run.id);
    expect(other).toEqual({ status: 'conflict', runId: first.run.id });
    const otherTenant = await createRun(store.ctx, {
      tenant: 'beta',
      spec,
      idempotency: { key: 'k1', bodyHash: 'h1' },
    });
    expect(otherTenant.status).toBe('created');
  });

  it('creates exactly one run under concurrent submissions with one key', async () => {
    const spec = testSpec('kind: sft');
    const results = await Promise.all(
      Array.from({ length: 10 }, () =>
        createRun(store.ctx, { tenant: 't', spec, idempotency: { key: 'same', bodyHash: 'h' } }),
      ),
    );
    expect(results.filter((r) => r.status === 'created')).toHaveLength(1);
    expect(new Set(results.map((r) => (r.status === 'conflict' ? r.runId : r.run.id))).size).toBe(
      1,
    );
  });
});

describe('listRuns', () => {
  it('lists newest first with filters and cursor pagination', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      const kind = i % 2 === 0 ? 'grpo' : 'sft';
      const result = await createRun(store.ctx, {
        tenant: 'acme',
        spec: testSpec(`kind: ${kind}\nlabels: {idx: "${i}", team: ${i < 4 ? 'a' : 'b'}}`),
        now: new Date(Date.UTC(2026, 0, 1, 0, 0, i)),
      });
      if (result.status !== 'created') throw new Error('create');
      ids.push(result.run.id);
    }
    await createRun(store.ctx, { tenant: 'other', spec: testSpec('kind: grpo') });
    await transitionRun(store.ctx, ids[2] ?? '', { to: 'cancelled', reason: 'test' });

    const page1 = await listRuns(store.ctx, { tenant: 'acme', limit: 3 });
    expect(page1.runs.map((r) => r.id)).toEqual([ids[6], ids[5], ids[4]]);
    const page2 = await listRuns(store.ctx, {
      tenant: 'acme',
      limit: 3,
      cursor: page1.nextCursor ?? '',
    });
    expect(page2.runs.map((r) => r.id)).toEqual([ids[3], ids[2], ids[1]]);
    const page3 = await listRuns(store.ctx, {
      tenant: 'acme',
      limit: 3,
      cursor: page2.nextCursor ?? '',
    });
    expect(page3.runs.map((r) => r.id)).toEqual([ids[0]]);
    expect(page3.nextCursor).toBeNull();

    const grpo = await listRuns(store.ctx, { tenant: 'acme', kind: 'grpo', state: 'queued' });
    expect(grpo.runs.map((r) => r.id)).toEqual([ids[6], ids[4], ids[0]]);
    const labelled = await listRuns(store.ctx, { tenant: 'acme', labels: { team: 'a', idx: '1' } });
    expect(labelled.runs.map((r) => r.id)).toEqual([ids[1]]);
    const cancelled = await listRuns(store.ctx, { tenant: 'acme', state: 'cancelled' });
    expect(cancelled.runs.map((r) => r.id)).toEqual([ids[2]]);
  });
});

describe('getRunView', () => {
  it('returns the run, its history and what a waiting run waits on, in one call', async () => {
    const created = await createRun(store.ctx, {
      tenant: 'acme',
      spec: testSpec('kind: sft\nname: "a \\"quoted\\" run"'),
    });
    if (created.status !== 'created') throw new Error('create');
    const id = created.run.id;
    expect(await getRunView(store.ctx, id, { tenant: 'other' })).toBeNull();
    expect(await getRunView(store.ctx, 'run_missing', { tenant: 'acme' })).toBeNull();
    const bare = await getRunView(store.ctx, id, { tenant: 'acme' });
    if (!bare) throw new Error('view');
    expect(runViewResource(bare).transitions).toHaveLength(1);
    expect(bare.waiting).toEqual({ onlineWorkers: 0, tenantRunning: 0, tenantCap: null });
    await setTenantLimits(store.ctx, 'acme', { maxConcurrentRuns: 3 });
    await heartbeatWorker(store.ctx, {
      id: 'w',
      pool: 'default',
      slots: 1,
      busy: 0,
      runs: [],
      startedAt: new Date().toISOString(),
    });
    const view = await getRunView(store.ctx, id, { tenant: 'acme', transitions: false });
    if (!view) throw new Error('view');
    expect(runViewResource(view).transitions).toBeUndefined();
    expect(view.waiting).toEqual({ onlineWorkers: 1, tenantRunning: 0, tenantCap: 3 });
    expect(runViewResource(view)).toEqual(await getRun(store.ctx, id));
  });

  it('serialises to exactly the resource, spliced from stored JSON', async () => {
    const created = await createRun(store.ctx, {
      tenant: 'acme',
      spec: testSpec('kind: grpo\nlabels: {a: "x/y"}'),
    });
    if (created.status !== 'created') throw new Error('create');
    const id = created.run.id;
    await startRun(store.ctx, id, 'w/1');
    await setCheckpoint(store.ctx, id, { step: 3, path: '/ck/"3"' });
    await releaseRun(store.ctx, id, 'lost "w/1"');
    const view = await getRunView(store.ctx, id, { tenant: 'acme' });
    if (!view) throw new Error('view');
    const resource = runViewResource(view);
    expect(JSON.parse(runViewJson(view))).toEqual(resource);
    expect(JSON.parse(runViewJson(view, 'because'))).toEqual({
      ...resource,
      waitingReason: 'because',
    });
    expect(resource.transitions?.at(-1)).toMatchObject({
      from: 'running',
      to: 'retrying',
      reason: 'lost "w/1"',
    });
  });
});
