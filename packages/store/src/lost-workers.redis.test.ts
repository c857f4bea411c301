import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type TestStore, testSpec, testStore } from '../test/helpers.ts';
import { keys } from './context.ts';
import { releaseRunsOfLostWorkers } from './lost-workers.ts';
import { createRun, getRun, getTransitions } from './runs.ts';
import { markPauseRequested } from './pause.ts';
import { startRun } from './transitions.ts';
import { heartbeatWorker } from './workers.ts';

let store: TestStore;
beforeEach(async () => {
  store = await testStore();
});
afterEach(async () => {
  await store.cleanup();
});

const beat = (id: string, runs: string[]) =>
  heartbeatWorker(store.ctx, {
    id,
    pool: 'default',
    slots: 1,
    busy: runs.length,
    runs,
    startedAt: new Date().toISOString(),
  });

async function runningOn(workerId: string): Promise<string> {
  const created = await createRun(store.ctx, { tenant: 't', spec: testSpec('kind: sft') });
  if (created.status !== 'created') throw new Error('create');
  await beat(workerId, [created.run.id]);
  expect((await startRun(store.ctx, created.run.id, workerId)).status).toBe('started');
  return created.run.id;
}

describe('releaseRunsOfLostWorkers', () => {
  it('moves the running runs of a worker whose heartbeat expired to retrying', async () => {
    const lost = await runningOn('w-dead');
    const alive = await runningOn('w-alive');
    expect(await releaseRunsOfLostWorkers(store.ctx, ['t'])).toEqual([]);
    await store.ctx.redis.del(keys(store.prefix).worker('w-dead')); // its TTL ran out
    expect(await releaseRunsOfLostWorkers(store.ctx, ['t'])).toEqual([
      { runId: lost, workerId: 'w-dead' },
    ]);
    expect((await getRun(store.ctx, lost))?.state).toBe('retrying');
    expect((await getTransitions(store.ctx, lost)).at(-1)).toMatchObject({
      from: 'running',
      to: 'retrying',
      reason: 'worker w-dead lost (heartbeat expired)',
    });
    expect((await getRun(store.ctx, alive))?.state).toBe('running');
    // The tenant's running set no longer counts it; a second sweep finds nothing to do.
    expect(await store.ctx.redis.smembers(keys(store.prefix).tenantRunning('t'))).toEqual([alive]);
    expect(await releaseRunsOfLostWorkers(store.ctx, ['t'])).toEqual([]);
  });

  it('pauses instead a lost run that had a pause pending', async () => {
    const runId = await runningOn('w-dead');
    const cause = { by: 'guardrail' as const, reason: 'rule kl: 3 > 2' };
    expect(await markPauseRequested(store.ctx, runId, cause, { attempt: 1 })).toBe('requested');
    await store.ctx.redis.del(keys(store.prefix).worker('w-dead'));
    expect(await releaseRunsOfLostWorkers(store.ctx, ['t'])).toEqual([
      { runId, workerId: 'w-dead', paused: true },
    ]);
    expect(await getRun(store.ctx, runId)).toMatchObject({
      state: 'paused',
      pause: { by: 'guardrail' },
    });
    expect((await getTransitions(store.ctx, runId)).at(-1)).toEqual({
      from: 'running',
      to: 'paused',
      at: expect.any(String),
      by: 'guardrail',
      reason: 'paused by guardrail: rule kl: 3 > 2 (worker w-dead lost (heartbeat expired))',
    });
  });

  it('leaves a run alone once another worker has taken it over', async () => {
    const runId = await runningOn('w1');
    await store.ctx.redis.del(keys(store.prefix).worker('w1'));
    await beat('w2', [runId]);
    expect((await startRun(store.ctx, runId, 'w2')).status).toBe('started'); // takeover
    expect(await releaseRunsOfLostWorkers(store.ctx, ['t'])).toEqual([]);
    expect((await getRun(store.ctx, runId))?.state).toBe('running');
  });
});
