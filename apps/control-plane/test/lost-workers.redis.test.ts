// A worker that dies without a word (kill -9): the control plane moves its running run to
// `retrying` once the heartbeat record expires, instead of leaving it `running` (and counted
// against the tenant's cap) until the job lock expires.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { keys } from '@anneal/store';
import { TOKENS, type TestPlane, auth, eventually, submit, testPlane } from './helpers.ts';
import { TestWorker } from './test-worker.ts';

let plane: TestPlane;
let worker: TestWorker;
beforeEach(async () => {
  plane = await testPlane({ settings: { lostWorkerSweepMs: 100 } });
  worker = await new TestWorker({ prefix: plane.prefix, id: 'w-doomed', holdAtStep: 2 }).start();
});
afterEach(async () => {
  await worker.close();
  await plane.cleanup();
});

const getRun = async (id: string) =>
  (
    await plane.app.inject({
      method: 'GET',
      url: `/v1/runs/${id}`,
      headers: auth(TOKENS.acmeViewer),
    })
  ).json();

describe('lost workers', () => {
  it('moves the run of a worker whose heartbeat expired to retrying within one sweep', async () => {
    const id = (await submit(plane.app, 'kind: sft\nsteps: 5')).json().id;
    await eventually(() => worker.isHeld(id));
    expect((await getRun(id)).state).toBe('running');
    worker.stopHeartbeat();
    await new Promise((resolve) => setTimeout(resolve, 300)); // several sweeps: nothing happens
    expect((await getRun(id)).state).toBe('running');

    await plane.redis.del(keys(plane.prefix).worker('w-doomed')); // the record's TTL runs out
    const expiredAt = Date.now();
    const run = await eventually(async () => {
      const r = await getRun(id);
      return r.state === 'retrying' && r;
    });
    const detectedMs = Date.now() - expiredAt;
    expect(run.transitions.at(-1)).toMatchObject({
      from: 'running',
      to: 'retrying',
      reason: 'worker w-doomed lost (heartbeat expired)',
    });
    expect(detectedMs).toBeLessThan(5_000); // sweep interval 100 ms; bounded, not a timing claim
    expect(await plane.redis.smembers(keys(plane.prefix).tenantRunning('acme'))).toEqual([]);
  });
});
