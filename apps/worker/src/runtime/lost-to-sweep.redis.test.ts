// A live worker whose heartbeat ran late: the control plane's sweep moved its run to `retrying`,
// its next write is fenced and it stops as lost. Nobody else holds the run's job, so the worker
// must hand the job back; a run left `retrying` with its job completed would never run again.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { getRun, keys, releaseRunsOfLostWorkers } from '@anneal/store';
import { type TestEnv, eventually, testEnv } from '../../test/helpers.ts';

let env: TestEnv;
beforeEach(async () => {
  env = await testEnv();
});
afterEach(async () => {
  await env.cleanup();
});

describe('a run lost to the lost-worker sweep', () => {
  it('is handed back to the queue and finishes', async () => {
    await env.startWorker({ workerId: 'w-late', heartbeatSeconds: 60, heartbeatTtlSeconds: 120 });
    const runId = await env.submit(
      'kind: sft\nsteps: 30\ncheckpointInterval: 2\nlabels: {step-ms: "40"}',
    );
    await eventually(async () => ((await getRun(env.store, runId))?.lastStep ?? 0) >= 3);
    // The heartbeat record expired while the worker was busy: the sweep releases its run.
    await env.redis.del(keys(env.prefix).worker('w-late'));
    const released = await releaseRunsOfLostWorkers(env.store, ['default']);
    expect(released).toEqual([{ runId, workerId: 'w-late' }]);
    await eventually(
      async () => (await getRun(env.store, runId))?.state === 'succeeded',
      60_000,
      'run succeeded',
    );
    const done = await getRun(env.store, runId);
    expect(done?.attempt).toBe(2);
    expect(done?.lastStep).toBe(30);
  }, 90_000);
});
