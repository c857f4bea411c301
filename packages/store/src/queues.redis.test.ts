import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type TestStore, testStore } from '../test/helpers.ts';
import {
  type PoolQueues,
  createPoolQueues,
  enqueueRun,
  queueCounts,
  removeQueuedJob,
} from './queues.ts';

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

describe('pool queues', () => {
  it('orders jobs by priority (higher first), FIFO within a priority, under the store prefix', async () => {
    const queue = queues.get('gpu');
    await enqueueRun(queue, { id: 'run_low', priority: 10 });
    await enqueueRun(queue, { id: 'run_high', priority: 90 });
    await enqueueRun(queue, { id: 'run_mid1', priority: 50 });
    await enqueueRun(queue, { id: 'run_mid2', priority: 50 });
    await enqueueRun(queue, { id: 'run_high', priority: 90 });
    const order = (await queue.getPrioritized(0, -1)).map((job) => job.id);
    expect(order).toEqual(['run_high', 'run_mid1', 'run_mid2', 'run_low']);
    expect(await queueCounts(queue)).toMatchObject({ prioritized: 4, active: 0 });
    const bullKeys = await store.redis.keys(`${store.prefix}:bull:pool-gpu:*`);
    expect(bullKeys.length).toBeGreaterThan(0);
  });

  it('removes a waiting job by run id', async () => {
    const queue = queues.get('gpu');
    await enqueueRun(queue, { id: 'run_a', priority: 50 });
    expect(await removeQueuedJob(queue, 'run_a')).toBe(true);
    expect(await removeQueuedJob(queue, 'run_a')).toBe(false);
    expect((await queueCounts(queue)).prioritized).toBe(0);
  });
});
