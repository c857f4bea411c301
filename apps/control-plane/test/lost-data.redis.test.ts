// After a Redis failover to a replica that was behind, unfinished runs whose data it lacked
// (jobs/audit.ts, store/audit.ts): a run without its BullMQ job is queued again (a running
// one released first), a run whose step history cannot be completed (steps missing below its
// checkpoint) fails; each says so with a `run:notice` redis_data_lost on its event stream.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  appendStep,
  createPoolQueues,
  getRun,
  type PoolQueues,
  readEvents,
  setCheckpoint,
  startRun,
} from '@anneal/store';
import { createLostDataAudit } from '../src/jobs/audit.ts';
import { type TestPlane, eventually, submit, testPlane } from './helpers.ts';

let plane: TestPlane;
let queues: PoolQueues;
beforeEach(async () => {
  plane = await testPlane();
  queues = createPoolQueues(plane.connection(), plane.prefix);
});
afterEach(async () => {
  await queues.close();
  await plane.cleanup();
});

const silent = { warn: () => {} };
const audit = () =>
  createLostDataAudit(
    { store: plane.store, queues, operator: plane.operator },
    plane.redis,
    silent,
    {
      everyMs: 60_000,
      minAgeMs: 0,
    },
  );

const jobWaits = async (id: string) =>
  ['waiting', 'prioritized'].includes(await queues.get('default').getJobState(id));

/** A submitted run whose job the relay has added (the outbox is empty again). */
async function submitted(): Promise<string> {
  const id = (await submit(plane.app, 'kind: sft\nsteps: 6')).json().id as string;
  await eventually(() => jobWaits(id));
  await eventually(async () => (await plane.redis.zcard(`${plane.prefix}:outbox`)) === 0);
  return id;
}

const notices = async (id: string) =>
  (await readEvents(plane.store, id))
    .filter((e) => e.event.type === 'run:notice')
    .map((e) => e.event as { code: string; message: string });

describe('lost-data audit', () => {
  it('queues again a waiting run whose job Redis lost, and says so', async () => {
    const id = await submitted();
    await queues.get('default').remove(id); // the promoted replica never had the job
    const found = await audit().run();
    expect(found).toEqual([{ kind: 'job', runId: id, state: 'queued', jobState: 'unknown' }]);
    expect(await jobWaits(id)).toBe(true);
    expect(await notices(id)).toEqual([
      expect.objectContaining({
        code: 'redis_data_lost',
        message: expect.stringMatching(/queued again/),
      }),
    ]);
    expect(await audit().run()).toEqual([]); // repaired: nothing found the second time
  });

  it('releases a running run whose job is gone and queues it again', async () => {
    const id = await submitted();
    await startRun(plane.store, id, 'w1');
    await queues.get('default').remove(id);
    await audit().run();
    const run = await getRun(plane.store, id, { transitions: true });
    expect(run?.state).toBe('retrying');
    expect(run?.transitions?.at(-1)?.reason).toMatch(/Redis lost its job in a failover/);
    expect(await jobWaits(id)).toBe(true);
  });

  it('fails a run whose lost steps lie below its checkpoint (its history cannot be completed)', async () => {
    const id = await submitted();
    await startRun(plane.store, id, 'w1');
    for (const step of [1, 2, 4, 5]) await appendStep(plane.store, id, step, { loss: 1 });
    await setCheckpoint(plane.store, id, { step: 4, path: '/ck/4' });
    const found = await audit().run();
    expect(found).toEqual([
      { kind: 'steps', runId: id, state: 'running', missing: [3], checkpointStep: 4 },
    ]);
    const run = await getRun(plane.store, id);
    expect(run?.state).toBe('failed');
    expect(run?.error).toMatch(
      /Redis lost step\(s\) 3 of this run.*checkpoint \(step 4\) is past them/,
    );
    expect((await notices(id)).map((n) => n.code)).toEqual(['redis_data_lost']);
  });

  it('leaves a run whose lost steps its resume runs again (the worker notices the gap)', async () => {
    const id = await submitted();
    await startRun(plane.store, id, 'w1');
    for (const step of [1, 2, 4]) await appendStep(plane.store, id, step, { loss: 1 });
    await setCheckpoint(plane.store, id, { step: 2, path: '/ck/2' });
    const found = await audit().run();
    expect(found).toEqual([
      { kind: 'steps', runId: id, state: 'running', missing: [3], checkpointStep: 2 },
    ]);
    expect((await getRun(plane.store, id))?.state).toBe('running');
  });
});
