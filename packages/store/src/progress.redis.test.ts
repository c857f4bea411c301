// Progress resets the run job's stalled count (progress-script.ts): BullMQ 6.7's stalled-job
// check (moveStalledJobsToWait-9.lua) counts losses in the job hash's `stc` and fails the job
// once it passes maxStalledCount; a first step commit or a new checkpoint sets it back to 0, a
// duplicate commit or a repeated checkpoint leaves it. The job is a real BullMQ job.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type TestStore, testSpec, testStore } from '../test/helpers.ts';
import { setCheckpoint } from './checkpoints.ts';
import { runJobKeyParts } from './run-job-key.ts';
import { createPoolQueues, enqueueRun, type PoolQueues } from './queues.ts';
import { createRun } from './runs.ts';
import { appendStep } from './steps.ts';
import { startRun } from './transitions.ts';

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

describe('progress and the stalled count', () => {
  it('a committed step or a new checkpoint sets the job’s stc to 0; a duplicate does not', async () => {
    const created = await createRun(store.ctx, { tenant: 't', spec: testSpec('kind: sft', 'p1') });
    if (created.status !== 'created') throw new Error('create');
    const runId = created.run.id;
    const queue = queues.get('p1');
    await enqueueRun(queue, { id: runId, priority: 0 });
    const [head, tail] = runJobKeyParts(store.prefix, runId);
    const jobKey = `${head}p1${tail}`;
    // The key BullMQ itself names the job by.
    expect(jobKey).toBe(queue.toKey(runId));
    expect(await store.redis.exists(jobKey)).toBe(1);
    await startRun(store.ctx, runId, 'w1');
    const stc = async () => store.redis.hget(jobKey, 'stc');
    // As BullMQ's stalled check leaves it after two losses.
    await store.redis.hset(jobKey, 'stc', '2');
    expect((await appendStep(store.ctx, runId, 1, { loss: 1 }, { attempt: 1 })).status).toBe(
      'committed',
    );
    expect(await stc()).toBe('0');
    await store.redis.hset(jobKey, 'stc', '2');
    expect((await appendStep(store.ctx, runId, 1, { loss: 1 }, { attempt: 1 })).status).toBe(
      'duplicate',
    );
    expect(await stc()).toBe('2');
    expect(await setCheckpoint(store.ctx, runId, { step: 1, path: '/c1' }, { attempt: 1 })).toBe(
      'saved',
    );
    expect(await stc()).toBe('0');
    await store.redis.hset(jobKey, 'stc', '1');
    // The same pointer again is no progress.
    await setCheckpoint(store.ctx, runId, { step: 1, path: '/c1' }, { attempt: 1 });
    expect(await stc()).toBe('1');
  });
});
