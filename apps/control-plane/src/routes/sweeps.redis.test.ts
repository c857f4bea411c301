// Sweeps over Fastify (inject) and a real Redis: POST /v1/sweeps expands a base spec and a grid
// into runs with the sweep's label and split budget; validation names the grid path; the grid
// cap; Idempotency-Key replays (an interrupted submission completed by its replay); the sweep
// resource (counts, runs, best by `select`), tenant scope, paging; cancel, pause and resume of
// every run; GET /v1/runs/compare on the sweep's runs.
import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunComparison, RunResource, SweepList, SweepResource } from '@anneal/protocol';
import { appendStep, startRun } from '@anneal/store';
import { TOKENS, type TestPlane, auth, testPlane } from '../../test/helpers.ts';

let plane: TestPlane;
beforeEach(async () => {
  plane = await testPlane();
});
afterEach(async () => {
  await plane.cleanup();
});

const SWEEP = `kind: sweep
name: lr-by-len
labels: { team: search }
base:
  kind: grpo
  pool: gpu
  steps: 3
grid:
  optimizer.learningRate: [1.0e-5, 3.0e-5]
  reward.lambdaLen: [0, 0.2]
select: { metric: loss, mode: min }
budget: { maxUsd: 8 }
`;

function postSweep(body: string, options: { token?: string; key?: string } = {}) {
  return plane.app.inject({
    method: 'POST',
    url: '/v1/sweeps',
    headers: {
      ...auth(options.token ?? TOKENS.acmeSubmitter),
      'content-type': body.trim().startsWith('{') ? 'application/json' : 'application/yaml',
      ...(options.key !== undefined && { 'idempotency-key': options.key }),
    },
    payload: body,
  });
}

const get = (url: string, token: string = TOKENS.acmeViewer) =>
  plane.app.inject({ method: 'GET', url, headers: auth(token) });
const post = (url: string, token: string = TOKENS.acmeSubmitter) =>
  plane.app.inject({ method: 'POST', url, headers: auth(token) });

async function runsOfTenant(): Promise<RunResource[]> {
  return (await get('/v1/runs?limit=200')).json<{ runs: RunResource[] }>().runs;
}

describe('POST /v1/sweeps', () => {
  it('expands the grid into queued runs with the sweep label, its labels and a split budget', async () => {
    const res = await postSweep(SWEEP);
    expect(res.statusCode, res.body).toBe(201);
    const sweep = res.json<SweepResource>();
    expect(res.headers.location).toBe(`/v1/sweeps/${sweep.id}`);
    expect(sweep).toMatchObject({
      tenant: 'acme',
      name: 'lr-by-len',
      kind: 'grpo',
      budget: { maxUsd: 8, perRunUsd: 2 },
      counts: { queued: 4, running: 0 },
      done: false,
      best: null,
    });
    expect(sweep.runs.map((r) => r.values)).toEqual([
      { 'optimizer.learningRate': 1e-5, 'reward.lambdaLen': 0 },
      { 'optimizer.learningRate': 1e-5, 'reward.lambdaLen': 0.2 },
      { 'optimizer.learningRate': 3e-5, 'reward.lambdaLen': 0 },
      { 'optimizer.learningRate': 3e-5, 'reward.lambdaLen': 0.2 },
    ]);
    const labelled = await get(`/v1/runs?label=sweep=${sweep.id}&limit=200`);
    const runs = labelled.json<{ runs: RunResource[] }>().runs;
    expect(runs.map((r) => r.id).sort()).toEqual(sweep.runs.map((r) => r.id).sort());
    const third = runs.find((r) => r.id === sweep.runs[2]!.id)!;
    expect(third).toMatchObject({
      state: 'queued',
      pool: 'gpu',
      name: 'lr-by-len #3',
      labels: { team: 'search', sweep: sweep.id },
    });
    expect(third.spec).toMatchObject({
      steps: 3,
      optimizer: { learningRate: 3e-5 },
      reward: { lambdaLen: 0 },
      budget: { maxUsd: 2 },
    });
  });

  it('names the grid path that is no field of the kind, and writes nothing', async () => {
    const res = await postSweep(SWEEP.replace('reward.lambdaLen', 'reward.lambdaLength'));
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    const body = res.json();
    expect(body.code).toBe('ANNEAL_ERR_SWEEP_INVALID');
    expect(body.errors).toHaveLength(1);
    expect(body.errors[0]).toMatchObject({ path: '/grid/reward.lambdaLength', line: 10 });
    expect(body.errors[0].message).toContain("no field 'lambdaLength' in 'reward'");
    expect(await runsOfTenant()).toEqual([]);
    expect((await get('/v1/sweeps')).json<SweepList>().sweeps).toEqual([]);
  });

  it('names the grid value the operator does not have (a resolve error, not a spec error)', async () => {
    const res = await postSweep(
      SWEEP.replace('steps: 3\n', 'steps: 3\n').replace(
        'reward.lambdaLen: [0, 0.2]',
        'pool: [gpu, nowhere]',
      ),
    );
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({
      code: 'ANNEAL_ERR_UNKNOWN_RESOURCE',
      errors: [{ path: '/grid/pool/1' }],
    });
    expect(await runsOfTenant()).toEqual([]);
  });

  it('refuses a grid of more than 64 runs with its own code', async () => {
    const seeds = Array.from({ length: 33 }, (_, i) => i).join(', ');
    const res = await postSweep(SWEEP.replace('reward.lambdaLen: [0, 0.2]', `seed: [${seeds}]`));
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({
      code: 'ANNEAL_ERR_SWEEP_TOO_LARGE',
      errors: [{ path: '/grid' }],
    });
    expect(res.json().errors[0].message).toContain('66 runs');
  });

  it('is idempotent with an Idempotency-Key, and a replay creates the runs an interrupted one did not', async () => {
    const first = await postSweep(SWEEP, { key: 'sweep-1' });
    expect(first.statusCode).toBe(201);
    const sweep = first.json<SweepResource>();
    const again = await postSweep(SWEEP, { key: 'sweep-1' });
    expect(again.statusCode).toBe(200);
    expect(again.json<SweepResource>().id).toBe(sweep.id);
    expect(await runsOfTenant()).toHaveLength(4);
    const other = await postSweep(SWEEP.replace('maxUsd: 8', 'maxUsd: 9'), { key: 'sweep-1' });
    expect(other.statusCode).toBe(409);
    expect(other.json().code).toBe('ANNEAL_ERR_IDEMPOTENCY_CONFLICT');

    // As if the submission had stopped before its last run: the record lists it, Redis lacks it.
    const lost = sweep.runs[3]!.id;
    const keyHash = createHash('sha256').update(`${sweep.id}/3`).digest('hex');
    await plane.redis.del(`${plane.prefix}:run:${lost}`, `${plane.prefix}:idem:acme:${keyHash}`);
    await plane.redis.zrem(`${plane.prefix}:tenant:acme:runs`, lost);
    const partial = (await get(`/v1/sweeps/${sweep.id}`)).json<SweepResource>();
    expect(partial.runs.map((r) => r.id)).not.toContain(lost);
    const replay = await postSweep(SWEEP, { key: 'sweep-1' });
    expect(replay.statusCode).toBe(200);
    expect(replay.json<SweepResource>().runs.map((r) => r.id)).toEqual(sweep.runs.map((r) => r.id));
    const restored = (await get(`/v1/runs/${lost}`)).json<RunResource>();
    expect(restored).toMatchObject({ state: 'queued', labels: { sweep: sweep.id } });
    expect(restored.spec).toMatchObject({
      optimizer: { learningRate: 3e-5 },
      reward: { lambdaLen: 0.2 },
    });
  });
});

describe('GET /v1/sweeps', () => {
  it('shows counts and the best run by the select metric; other tenants get 404', async () => {
    const sweep = (await postSweep(SWEEP)).json<SweepResource>();
    // Two running (the tenant's cap in the test config), two queued.
    const losses = [0.9, 0.4];
    for (const [i, loss] of losses.entries()) {
      const id = sweep.runs[i]!.id;
      const started = await startRun(plane.store, id, 'w1');
      if (started.status !== 'started') throw new Error(`start ${id}: ${started.status}`);
      await appendStep(plane.store, id, 1, { loss: loss + 1 }, { attempt: started.attempt });
      await appendStep(plane.store, id, 2, { loss }, { attempt: started.attempt });
    }
    const res = await get(`/v1/sweeps/${sweep.id}`);
    expect(res.statusCode).toBe(200);
    const view = res.json<SweepResource>();
    expect(view.counts).toMatchObject({ running: 2, queued: 2 });
    expect(view.best).toEqual({ runId: sweep.runs[1]!.id, value: 0.4 });
    expect(view.runs.map((r) => r.metric)).toEqual([0.9, 0.4, null, null]);
    expect(view.runs[0]).toMatchObject({ state: 'running', lastStep: 2 });

    const beta = await get(`/v1/sweeps/${sweep.id}`, TOKENS.betaSubmitter);
    expect(beta.statusCode).toBe(404);
    expect(beta.json().code).toBe('ANNEAL_ERR_SWEEP_NOT_FOUND');
    expect((await get('/v1/sweeps', TOKENS.betaSubmitter)).json<SweepList>().sweeps).toEqual([]);
  });

  it('lists sweeps newest first, a page at a time', async () => {
    const a = (await postSweep(SWEEP)).json<SweepResource>();
    const b = (
      await postSweep(SWEEP.replace('name: lr-by-len', 'name: second'))
    ).json<SweepResource>();
    const first = (await get('/v1/sweeps?limit=1')).json<SweepList>();
    expect(first.sweeps.map((s) => [s.id, s.runCount, s.counts.queued])).toEqual([[b.id, 4, 4]]);
    expect(first.nextCursor).toBe(b.id);
    const second = (await get(`/v1/sweeps?limit=1&cursor=${first.nextCursor}`)).json<SweepList>();
    expect(second.sweeps.map((s) => s.id)).toEqual([a.id]);
    expect(second.nextCursor).toBeNull();
  });
});

describe('POST /v1/sweeps/{id}/cancel, /pause, /resume', () => {
  it('pauses, resumes and cancels every run of the sweep', async () => {
    const sweep = (await postSweep(SWEEP)).json<SweepResource>();
    const paused = await post(`/v1/sweeps/${sweep.id}/pause`);
    expect(paused.statusCode, paused.body).toBe(200);
    expect(paused.json<SweepResource>().counts).toMatchObject({ paused: 4, queued: 0 });
    const resumed = await post(`/v1/sweeps/${sweep.id}/resume`);
    expect(resumed.json<SweepResource>().counts).toMatchObject({ paused: 0, queued: 4 });
    const cancelled = await post(`/v1/sweeps/${sweep.id}/cancel`);
    expect(cancelled.json<SweepResource>()).toMatchObject({
      counts: { cancelled: 4 },
      done: true,
    });
    const runs = await runsOfTenant();
    expect(runs.every((r) => r.state === 'cancelled')).toBe(true);
    // Another tenant cannot act on it.
    const beta = await post(`/v1/sweeps/${sweep.id}/cancel`, TOKENS.betaSubmitter);
    expect(beta.statusCode).toBe(404);
  });
});

describe('GET /v1/runs/compare', () => {
  it("shows the sweep's differing spec fields and each run's final metrics", async () => {
    const sweep = (await postSweep(SWEEP)).json<SweepResource>();
    const [a, b] = sweep.runs.map((r) => r.id);
    const started = await startRun(plane.store, a!, 'w1');
    if (started.status !== 'started') throw new Error('start');
    await appendStep(plane.store, a!, 1, { loss: 0.5, grad_norm: 2 }, { attempt: started.attempt });
    const res = await get(`/v1/runs/compare?run=${a}&run=${b}`);
    expect(res.statusCode, res.body).toBe(200);
    const comparison = res.json<RunComparison>();
    expect(comparison.kind).toBe('grpo');
    expect(comparison.fields).toEqual(['reward.lambdaLen']);
    expect(comparison.runs).toMatchObject([
      { id: a, differences: { 'reward.lambdaLen': 0 }, final: { step: 1, metrics: { loss: 0.5 } } },
      { id: b, differences: { 'reward.lambdaLen': 0.2 }, final: null },
    ]);
  });

  it('refuses runs of two kinds naming the odd one, and another tenant’s run as not found', async () => {
    const sweep = (await postSweep(SWEEP)).json<SweepResource>();
    const sft = await plane.app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: { ...auth(TOKENS.acmeSubmitter), 'content-type': 'application/yaml' },
      payload: 'kind: sft\n',
    });
    const res = await get(`/v1/runs/compare?run=${sweep.runs[0]!.id}&run=${sft.json().id}`);
    expect(res.statusCode).toBe(400);
    expect(res.json().errors[0].path).toBe('/query/run/1');
    const beta = await get(
      `/v1/runs/compare?run=${sweep.runs[0]!.id}&run=${sweep.runs[1]!.id}`,
      TOKENS.betaSubmitter,
    );
    expect(beta.statusCode).toBe(404);
  });
});
