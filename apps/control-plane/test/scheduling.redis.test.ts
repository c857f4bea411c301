// Lifecycle and scheduling end to end: control plane (inject) + a test worker on real BullMQ.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  TOKENS,
  type TestPlane,
  auth,
  eventually,
  submit,
  testOperatorConfig,
  testPlane,
} from './helpers.ts';
import { TestWorker } from './test-worker.ts';

let plane: TestPlane;
const workers: TestWorker[] = [];

beforeEach(async () => {
  plane = await testPlane();
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.close()));
  await plane.cleanup();
});

async function worker(options: Partial<ConstructorParameters<typeof TestWorker>[0]> = {}) {
  const w = await new TestWorker({ prefix: plane.prefix, ...options }).start();
  workers.push(w);
  return w;
}

const getRun = async (id: string, token: string = TOKENS.acmeViewer) =>
  (await plane.app.inject({ method: 'GET', url: `/v1/runs/${id}`, headers: auth(token) })).json();

const post = (url: string, token: string, payload?: object) =>
  plane.app.inject({ method: 'POST', url, headers: auth(token), ...(payload && { payload }) });

describe('run lifecycle', () => {
  it('goes queued -> running -> succeeded with every step recorded once', async () => {
    await worker();
    const id = (await submit(plane.app, 'kind: sft\nsteps: 4')).json().id;
    const done = await eventually(async () => {
      const run = await getRun(id);
      return run.state === 'succeeded' && run;
    });
    expect(done.transitions.map((t: { to: string }) => t.to)).toEqual([
      'queued',
      'running',
      'succeeded',
    ]);
    expect(done).toMatchObject({
      lastStep: 4,
      attempt: 1,
      workerId: 'test-worker',
      checkpoint: { step: 4 },
    });
    const metrics = (
      await plane.app.inject({
        method: 'GET',
        url: `/v1/runs/${id}/metrics`,
        headers: auth(TOKENS.acmeViewer),
      })
    ).json();
    expect(metrics.steps.map((s: { step: number }) => s.step)).toEqual([1, 2, 3, 4]);
  });
});

describe('priorities', () => {
  it('starts higher-priority runs first, FIFO within a priority', async () => {
    const ids: Record<string, string> = {};
    for (const [name, priority] of [
      ['low', 10],
      ['high', 90],
      ['mid1', 50],
      ['mid2', 50],
    ] as const) {
      ids[name] = (await submit(plane.app, `kind: sft\nsteps: 1\npriority: ${priority}`)).json().id;
    }
    const w = await worker();
    await eventually(() => w.started.length === 4);
    expect(w.started).toEqual([ids.high, ids.mid1, ids.mid2, ids.low]);
  });
});

describe('per-tenant concurrency cap', () => {
  it('keeps excess runs queued with a reason, and starts them when a slot frees', async () => {
    await plane.cleanup();
    plane = await testPlane({
      operator: testOperatorConfig({ tenants: { acme: { maxConcurrentRuns: 1 }, beta: {} } }),
    });
    const w = await worker({ concurrency: 3, holdAtStep: 1 });
    const first = (await submit(plane.app, 'kind: sft\nsteps: 1')).json().id;
    await eventually(() => w.isHeld(first));
    const second = (await submit(plane.app, 'kind: sft\nsteps: 1')).json().id;
    const beta = (
      await submit(plane.app, 'kind: sft\nsteps: 1', { token: TOKENS.betaSubmitter })
    ).json().id;
    await eventually(() => w.isHeld(beta));
    const waiting = await eventually(async () => {
      const run = await getRun(second);
      return run.waitingReason?.includes('limit') && run;
    });
    expect(waiting).toMatchObject({
      state: 'queued',
      waitingReason: "tenant 'acme' is at its limit of 1 concurrently running runs",
    });
    w.release(first);
    w.release(beta);
    await eventually(() => w.isHeld(second));
    w.release(second);
    await eventually(async () => (await getRun(second)).state === 'succeeded');
  });
});

describe('cancel', () => {
  it('cancels a queued run at once and removes its job', async () => {
    const id = (await submit(plane.app, 'kind: sft')).json().id;
    const jobKey = `${plane.prefix}:bull:pool-default:${id}`;
    await eventually(async () => (await plane.redis.exists(jobKey)) === 1);
    const res = await post(`/v1/runs/${id}/cancel`, TOKENS.acmeSubmitter, {
      reason: 'changed my mind',
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ state: 'cancelled', cancelRequested: true });
    expect(res.json().transitions.at(-1)).toMatchObject({
      from: 'queued',
      to: 'cancelled',
      reason: 'changed my mind',
    });
    expect(await plane.redis.exists(jobKey)).toBe(0);
    // cancelling again: 200 with the same shape as the first answer (transitions included)
    const again = await post(`/v1/runs/${id}/cancel`, TOKENS.acmeSubmitter);
    expect(again.statusCode).toBe(200);
    expect(Object.keys(again.json()).sort()).toEqual(Object.keys(res.json()).sort());
    expect(again.json().transitions).toEqual(res.json().transitions);
    expect((await post(`/v1/runs/${id}/cancel`, TOKENS.acmeViewer)).statusCode).toBe(403);
  });

  it('asks the owning worker to stop a running run at a step boundary, after a checkpoint', async () => {
    const w = await worker({ holdAtStep: 3 });
    const id = (await submit(plane.app, 'kind: sft\nsteps: 10')).json().id;
    await eventually(() => w.isHeld(id));
    const res = await post(`/v1/runs/${id}/cancel`, TOKENS.acmeSubmitter);
    expect(res.statusCode).toBe(202);
    expect(res.json()).toMatchObject({ state: 'running', cancelRequested: true });
    w.release(id);
    const run = await eventually(async () => {
      const r = await getRun(id);
      return r.state === 'cancelled' && r;
    });
    expect(run).toMatchObject({ lastStep: 2, checkpoint: { step: 2 } });
    const finished = await post(`/v1/runs/${id}/cancel`, TOKENS.acmeSubmitter);
    expect(finished.statusCode).toBe(200);
  });

  it('refuses to cancel a finished run', async () => {
    await worker();
    const id = (await submit(plane.app, 'kind: sft\nsteps: 1')).json().id;
    await eventually(async () => (await getRun(id)).state === 'succeeded');
    const res = await post(`/v1/runs/${id}/cancel`, TOKENS.acmeSubmitter);
    expect(res.statusCode).toBe(409);
    expect(res.json().code).toBe('ANNEAL_ERR_RUN_FINISHED');
  });
});

describe('pools, workers and drain', () => {
  it('aggregates the registry and queue, and drains a worker (operator only)', async () => {
    const w = await worker({ id: 'w-a', holdAtStep: 1 });
    const running = (await submit(plane.app, 'kind: sft\nsteps: 1')).json().id;
    await eventually(() => w.isHeld(running));
    await w.beat();
    await submit(plane.app, 'kind: sft\nsteps: 1\npriority: 80');
    await submit(plane.app, 'kind: sft\nsteps: 1', { token: TOKENS.betaSubmitter });
    const pools = (
      await plane.app.inject({ method: 'GET', url: '/v1/pools', headers: auth(TOKENS.acmeViewer) })
    ).json().pools;
    const pool = pools.find((p: { name: string }) => p.name === 'default');
    expect(pool).toMatchObject({
      slotsPerWorker: 1,
      workers: { online: 1, busy: 1, draining: 0 },
      slots: { total: 1, busy: 1, free: 0 },
      queue: { prioritized: 2, active: 1 },
    });
    expect(pool.oldestWaitingAgeSeconds).toBeGreaterThanOrEqual(0);
    expect(pools.find((p: { name: string }) => p.name === 'gpu')).toMatchObject({
      workers: { online: 0 },
      oldestWaitingAgeSeconds: null,
    });

    expect((await post('/v1/workers/w-a/drain', TOKENS.acmeSubmitter)).statusCode).toBe(403);
    const drained = await post('/v1/workers/w-a/drain', TOKENS.acmeOperator, {
      checkpointAndRelease: true,
    });
    expect(drained.statusCode).toBe(202);
    expect(drained.json()).toMatchObject({ id: 'w-a', draining: true, checkpointAndRelease: true });
    const listed = (
      await plane.app.inject({
        method: 'GET',
        url: '/v1/workers',
        headers: auth(TOKENS.acmeViewer),
      })
    ).json();
    expect(listed.workers).toMatchObject([{ id: 'w-a', draining: true, runs: [running] }]);
    const seenByBeta = await plane.app.inject({
      method: 'GET',
      url: '/v1/workers',
      headers: auth(TOKENS.betaSubmitter),
    });
    expect(seenByBeta.json().workers).toMatchObject([{ id: 'w-a', runs: [] }]);
    expect((await post('/v1/workers/ghost/drain', TOKENS.acmeOperator)).json().code).toBe(
      'ANNEAL_ERR_WORKER_NOT_FOUND',
    );
    w.release(running);
  });
});
