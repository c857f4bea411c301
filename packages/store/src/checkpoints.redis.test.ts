import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type TestStore, testSpec, testStore } from '../test/helpers.ts';
import {
  PENDING_USE_MS,
  getCheckpoint,
  protectCheckpoint,
  retireCheckpoint,
  setCheckpoint,
  unprotectCheckpoint,
  useCheckpoint,
} from './checkpoints.ts';
import {
  type CheckpointQuery,
  checkpointSummary,
  getCatalogueEntry,
  listCheckpoints,
  listKeptCheckpoints,
} from './checkpoint-catalogue.ts';
import { keys } from './context.ts';
import { setSafeCheckpoint } from './guardrails.ts';
import { createRun, getRun } from './runs.ts';
import { appendStep } from './steps.ts';
import { startRun, transitionRun } from './transitions.ts';

let store: TestStore;
let runId: string;
let attempt: number;

async function newRun(
  tenant = 't',
  options: { id?: string; parent?: { run: string; step: number } } = {},
) {
  const result = await createRun(store.ctx, { tenant, spec: testSpec('kind: sft'), ...options });
  if (result.status !== 'created') throw new Error('create');
  return result.run.id;
}

/** Commits steps 1..n with a loss of 10 - step, checkpointing `at` steps. */
async function train(n: number, at: readonly number[]) {
  for (let step = 1; step <= n; step++) {
    expect(
      (await appendStep(store.ctx, runId, step, { loss: 10 - step }, { attempt })).status,
    ).toBe('committed');
    if (at.includes(step)) {
      const saved = await setCheckpoint(
        store.ctx,
        runId,
        { step, path: `tinker://m/weights/s${step}`, samplerPath: `tinker://m/s${step}` },
        { attempt, requireStep: true },
      );
      expect(saved).toBe('saved');
    }
  }
}

/** The whole catalogue, oldest first (one page: these runs hold a few). */
const catalogue = async () =>
  (await listCheckpoints(store.ctx, runId, { status: 'all', order: 'asc', limit: 200 }))
    .checkpoints;

beforeEach(async () => {
  store = await testStore();
  runId = await newRun();
  const started = await startRun(store.ctx, runId, 'w1');
  if (started.status !== 'started') throw new Error('start');
  attempt = started.attempt;
});
afterEach(async () => {
  await store.cleanup();
});

describe('checkpoint catalogue', () => {
  it('lists every checkpoint recorded, with its step metrics, the latest being the resume pointer', async () => {
    await train(6, [2, 4, 6]);
    const list = await catalogue();
    expect(list.map((c) => [c.step, c.status, c.latest, c.metrics?.['loss']])).toEqual([
      [2, 'kept', false, 8],
      [4, 'kept', false, 6],
      [6, 'kept', true, 4],
    ]);
    expect(list[0]).toMatchObject({
      path: 'tinker://m/weights/s2',
      samplerPath: 'tinker://m/s2',
      protections: [],
      usedBy: [],
    });
    expect(await getCheckpoint(store.ctx, runId)).toMatchObject({ step: 6 });
  });

  it('catalogues nothing the pointer refuses (stale, fenced, uncommitted), and a re-sent write once', async () => {
    await train(4, [4]);
    expect(await setCheckpoint(store.ctx, runId, { step: 2, path: 'late' }, { attempt })).toBe(
      'stale',
    );
    expect(
      await setCheckpoint(store.ctx, runId, { step: 9, path: 'x' }, { attempt, requireStep: true }),
    ).toBe('uncommitted');
    expect(await setCheckpoint(store.ctx, runId, { step: 5, path: 'y' }, { attempt: 99 })).toBe(
      'fenced',
    );
    const again = { step: 4, path: 'tinker://m/weights/s4', samplerPath: 'tinker://m/s4' };
    expect(await setCheckpoint(store.ctx, runId, again, { attempt })).toBe('saved');
    expect((await catalogue()).map((c) => c.step)).toEqual([4]);
  });

  it('retires a checkpoint unless it is the latest, protected, or used by a run that starts from it', async () => {
    await train(6, [2, 4, 6]);
    expect(await retireCheckpoint(store.ctx, runId, 6, { attempt })).toEqual({
      status: 'kept',
      why: 'latest',
    });
    expect(await protectCheckpoint(store.ctx, runId, 2, { owner: 'guard', reason: 'clean' })).toBe(
      'ok',
    );
    expect(await retireCheckpoint(store.ctx, runId, 2, { attempt })).toEqual({
      status: 'kept',
      why: 'protected',
    });
    expect(await unprotectCheckpoint(store.ctx, runId, 2, 'guard')).toBe('ok');
    // What a guardrail rollback would restore stays too.
    await setSafeCheckpoint(
      store.ctx,
      runId,
      { step: 2, path: 'tinker://m/weights/s2' },
      { attempt },
    );
    expect(await retireCheckpoint(store.ctx, runId, 2, { attempt })).toEqual({
      status: 'kept',
      why: 'guardrail safe checkpoint',
    });
    await setSafeCheckpoint(
      store.ctx,
      runId,
      { step: 6, path: 'tinker://m/weights/s6' },
      { attempt },
    );

    const fork = await newRun('t');
    expect(await useCheckpoint(store.ctx, { run: runId, step: 4, tenant: 't' }, fork)).toBe('ok');
    expect(await retireCheckpoint(store.ctx, runId, 4, { attempt })).toEqual({
      status: 'kept',
      why: `used by ${fork}`,
    });
    // Once the fork is over, the use no longer keeps it.
    await transitionRun(store.ctx, fork, { to: 'cancelled', from: ['queued'], reason: 'test' });
    expect(await retireCheckpoint(store.ctx, runId, 4, { attempt })).toMatchObject({
      status: 'retired',
      path: 'tinker://m/weights/s4',
      samplerPath: 'tinker://m/s4',
    });
    expect(await retireCheckpoint(store.ctx, runId, 2, { attempt: attempt + 1 })).toEqual({
      status: 'fenced',
    });
    expect((await retireCheckpoint(store.ctx, runId, 2, { attempt })).status).toBe('retired');
    const list = await catalogue();
    expect(list.map((c) => [c.step, c.status])).toEqual([
      [2, 'deleted'],
      [4, 'deleted'],
      [6, 'kept'],
    ]);
    expect(list[1]?.usedBy).toEqual([fork]);
    expect(await getCatalogueEntry(store.ctx, runId, 4)).toMatchObject({ deleted: true });
    expect(await protectCheckpoint(store.ctx, runId, 4, { owner: 'u', reason: 'r' })).toBe(
      'deleted',
    );
  });

  it('refuses a use of a step never recorded, a retired one, or another tenant’s run', async () => {
    await train(4, [2, 4]);
    expect((await retireCheckpoint(store.ctx, runId, 2, { attempt })).status).toBe('retired');
    const user = 'run_01J8Z3K4M5N6P7Q8R9S0T1V2W3';
    expect(await useCheckpoint(store.ctx, { run: runId, step: 3, tenant: 't' }, user)).toBe(
      'unknown',
    );
    expect(await useCheckpoint(store.ctx, { run: runId, step: 2, tenant: 't' }, user)).toBe(
      'deleted',
    );
    expect(await useCheckpoint(store.ctx, { run: runId, step: 4, tenant: 'other' }, user)).toBe(
      'missing',
    );
  });

  it('counts a use whose run is not created yet only for a while (a submission in flight)', async () => {
    await train(4, [2, 4]);
    const user = 'run_01J8Z3K4M5N6P7Q8R9S0T1V2W3';
    const takenAt = new Date(Date.now() - PENDING_USE_MS - 1000);
    expect(
      await useCheckpoint(store.ctx, { run: runId, step: 2, tenant: 't' }, user, takenAt),
    ).toBe('ok');
    expect((await retireCheckpoint(store.ctx, runId, 2, { attempt })).status).toBe('retired');
    const fresh = 'run_01J8Z3K4M5N6P7Q8R9S0T1V2W4';
    expect(await useCheckpoint(store.ctx, { run: runId, step: 4, tenant: 't' }, fresh)).toBe('ok');
    // step 4 is the latest: record 5 so that only the pending use keeps 4
    expect((await appendStep(store.ctx, runId, 5, { loss: 1 }, { attempt })).status).toBe(
      'committed',
    );
    expect(await setCheckpoint(store.ctx, runId, { step: 5, path: 'p5' }, { attempt })).toBe(
      'saved',
    );
    expect(await retireCheckpoint(store.ctx, runId, 4, { attempt })).toEqual({
      status: 'kept',
      why: `used by ${fresh}`,
    });
  });

  it('keeps a fork’s parent on its record', async () => {
    const fork = await newRun('t', { parent: { run: runId, step: 4 } });
    expect((await getRun(store.ctx, fork))?.parent).toEqual({ run: runId, step: 4 });
  });

  it('reads a page at a time: cursor position, status and step-range filters, either order', async () => {
    await train(12, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    for (const step of [1, 2, 3, 5, 8]) {
      expect((await retireCheckpoint(store.ctx, runId, step, { attempt })).status).toBe('retired');
    }
    const steps = async (query: Partial<CheckpointQuery>) => {
      const page = await listCheckpoints(store.ctx, runId, {
        status: 'all',
        order: 'asc',
        limit: 3,
        ...query,
      });
      return { steps: page.checkpoints.map((c) => c.step), more: page.more };
    };
    expect(await steps({})).toEqual({ steps: [1, 2, 3], more: true });
    expect(await steps({ after: 3 })).toEqual({ steps: [4, 5, 6], more: true });
    expect(await steps({ after: 9 })).toEqual({ steps: [10, 11, 12], more: false });
    expect(await steps({ status: 'kept' })).toEqual({ steps: [4, 6, 7], more: true });
    expect(await steps({ status: 'kept', after: 7 })).toEqual({ steps: [9, 10, 11], more: true });
    expect(await steps({ status: 'deleted', limit: 10 })).toEqual({
      steps: [1, 2, 3, 5, 8],
      more: false,
    });
    expect(await steps({ order: 'desc' })).toEqual({ steps: [12, 11, 10], more: true });
    expect(await steps({ order: 'desc', status: 'deleted', after: 5 })).toEqual({
      steps: [3, 2, 1],
      more: false,
    });
    expect(await steps({ from: 5, to: 8, limit: 10 })).toEqual({
      steps: [5, 6, 7, 8],
      more: false,
    });
    expect(await steps({ from: 5, to: 8, after: 6 })).toEqual({ steps: [7, 8], more: false });
    // A cursor from before the range starts at the range.
    expect(await steps({ from: 5, to: 8, after: 2, limit: 1 })).toEqual({ steps: [5], more: true });
    expect(await steps({ order: 'desc', from: 5, to: 8, after: 11 })).toEqual({
      steps: [8, 7, 6],
      more: true,
    });
    expect(await checkpointSummary(store.ctx, runId)).toEqual({
      latest: 12,
      kept: 7,
      deleted: { count: 5, firstStep: 1, lastStep: 8 },
    });
    expect((await listKeptCheckpoints(store.ctx, runId)).map((c) => c.step)).toEqual([
      4, 6, 7, 9, 10, 11, 12,
    ]);
  });

  it('compacts a retired entry to its step, times and paths', async () => {
    await train(4, [2, 4]);
    expect(await protectCheckpoint(store.ctx, runId, 2, { owner: 'u', reason: 'r' })).toBe('ok');
    expect(await unprotectCheckpoint(store.ctx, runId, 2, 'u')).toBe('ok');
    expect((await retireCheckpoint(store.ctx, runId, 2, { attempt })).status).toBe('retired');
    const stored = await store.ctx.redis.hget(keys(store.ctx.prefix).checkpoints(runId), '2');
    expect(Object.keys(JSON.parse(stored ?? '{}')).sort()).toEqual([
      'at',
      'deletedAt',
      'path',
      'samplerPath',
      'step',
    ]);
    const [entry] = (
      await listCheckpoints(store.ctx, runId, { status: 'deleted', order: 'asc', limit: 5 })
    ).checkpoints;
    expect(entry).toMatchObject({
      step: 2,
      status: 'deleted',
      path: 'tinker://m/weights/s2',
      protections: [],
    });
  });

  it('indexes a catalogue its indexes do not count (an older release wrote it), on first read or write', async () => {
    await train(6, [2, 4, 6]);
    expect((await retireCheckpoint(store.ctx, runId, 2, { attempt })).status).toBe('retired');
    const k = keys(store.ctx.prefix);
    // What an older release left: the hash alone, a deleted entry whole.
    await store.ctx.redis.del(k.checkpointsKept(runId), k.checkpointsDeleted(runId));
    const legacy = {
      step: 2,
      at: 'x',
      path: 'p2',
      deletedAt: 'y',
      protections: [{ owner: 'u', reason: 'r', at: 'z' }],
    };
    await store.ctx.redis.hset(k.checkpoints(runId), '2', JSON.stringify(legacy));
    expect((await catalogue()).map((c) => [c.step, c.status])).toEqual([
      [2, 'deleted'],
      [4, 'kept'],
      [6, 'kept'],
    ]);
    expect(await getCatalogueEntry(store.ctx, runId, 2)).toEqual({
      step: 2,
      path: 'p2',
      deleted: true,
    });
    // compacted as it was indexed
    expect(
      JSON.parse((await store.ctx.redis.hget(k.checkpoints(runId), '2')) ?? '{}'),
    ).not.toHaveProperty('protections');
    await store.ctx.redis.del(k.checkpointsKept(runId), k.checkpointsDeleted(runId));
    expect((await retireCheckpoint(store.ctx, runId, 4, { attempt })).status).toBe('retired');
    expect(await checkpointSummary(store.ctx, runId)).toMatchObject({
      kept: 1,
      deleted: { count: 2 },
    });
    // An older worker during an upgrade: a checkpoint in the hash only, beside the indexes.
    const older = { step: 7, at: 'x', path: 'p7' };
    await appendStep(store.ctx, runId, 7, { loss: 3 }, { attempt });
    await store.ctx.redis.hset(k.checkpoints(runId), '7', JSON.stringify(older));
    expect((await catalogue()).map((c) => [c.step, c.status])).toEqual([
      [2, 'deleted'],
      [4, 'deleted'],
      [6, 'kept'],
      [7, 'kept'],
    ]);
  });

  it('records a checkpoint without walking a catalogue its indexes already count', async () => {
    // Before, the script wrote the new entry and then checked the indexes against the hash: one
    // entry short every time, so each checkpoint indexed (and re-compacted) the whole catalogue,
    // O(entries) a write: a 100,000-step run checkpointing every step could not be written.
    await train(4, [1, 2, 3]);
    expect((await retireCheckpoint(store.ctx, runId, 1, { attempt })).status).toBe('retired');
    const k = keys(store.ctx.prefix);
    // A deleted entry a re-index would compact (it drops `marker`); the indexes count it.
    const marked = { step: 1, at: 'x', path: 'p1', deletedAt: 'y', marker: 'left alone' };
    await store.ctx.redis.hset(k.checkpoints(runId), '1', JSON.stringify(marked));
    expect(
      await setCheckpoint(
        store.ctx,
        runId,
        { step: 4, path: 'tinker://m/weights/s4' },
        { attempt },
      ),
    ).toBe('saved');
    expect(JSON.parse((await store.ctx.redis.hget(k.checkpoints(runId), '1')) ?? '{}')).toEqual(
      marked,
    );
    expect((await catalogue()).map((c) => [c.step, c.status])).toEqual([
      [1, 'deleted'],
      [2, 'kept'],
      [3, 'kept'],
      [4, 'kept'],
    ]);
  });
});
