// GET /v1/runs/{id}/checkpoints and forks (`model.checkpoint: {run, step}`) over real HTTP
// semantics (inject) and a real Redis: the catalogue as the store records it, tenant scope, a
// fork naming a deleted or unknown step refused as problem+json at /model/checkpoint/step, the
// fork's parent on its record and its use keeping the source checkpoint from retention, and
// retention's keepBest metric checked against the step-metric table.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CheckpointList, RunResource } from '@anneal/protocol';
import { appendStep, retireCheckpoint, setCheckpoint, startRun } from '@anneal/store';
import { TOKENS, type TestPlane, auth, submit, testPlane } from '../../test/helpers.ts';

let plane: TestPlane;
beforeEach(async () => {
  plane = await testPlane();
});
afterEach(async () => {
  await plane.cleanup();
});

const get = (url: string, token: string = TOKENS.acmeViewer) =>
  plane.app.inject({ method: 'GET', url, headers: auth(token) });

/** An sft run that committed steps 1..4 and checkpointed at 2 and 4. */
async function trainedRun(): Promise<{ id: string; attempt: number }> {
  const res = await submit(plane.app, 'kind: sft\nsteps: 4\ncheckpointRetention: {keepLast: 1}');
  expect(res.statusCode, res.body).toBe(201);
  const id = res.json<RunResource>().id;
  const started = await startRun(plane.store, id, 'w1');
  if (started.status !== 'started') throw new Error('start');
  const { attempt } = started;
  for (let step = 1; step <= 4; step++) {
    await appendStep(plane.store, id, step, { loss: 5 - step }, { attempt });
    if (step % 2 === 0) {
      const checkpoint = {
        step,
        path: `tinker://m/weights/s${step}`,
        samplerPath: `tinker://m/s${step}`,
      };
      expect(await setCheckpoint(plane.store, id, checkpoint, { attempt })).toBe('saved');
    }
  }
  return { id, attempt };
}

describe('GET /v1/runs/{id}/checkpoints', () => {
  it('lists the catalogue with step metrics and the resolved retention; other tenants get 404', async () => {
    const { id } = await trainedRun();
    const res = await get(`/v1/runs/${id}/checkpoints`);
    expect(res.statusCode, res.body).toBe(200);
    const list = res.json<CheckpointList>();
    expect(list.retention).toEqual({ keepLast: 1 });
    expect(list.checkpoints.map((c) => [c.step, c.status, c.latest, c.metrics?.['loss']])).toEqual([
      [2, 'kept', false, 3],
      [4, 'kept', true, 1],
    ]);
    expect(list.checkpoints[0]).toMatchObject({ samplerPath: 'tinker://m/s2', usedBy: [] });
    const other = await get(`/v1/runs/${id}/checkpoints`, TOKENS.betaSubmitter);
    expect(other.statusCode).toBe(404);
    expect(other.json()).toMatchObject({ code: 'ANNEAL_ERR_RUN_NOT_FOUND' });
  });
});

describe('GET /v1/runs/{id}/checkpoints: pages', () => {
  it('pages kept or deleted entries by cursor in either order, a step range, with the summary', async () => {
    const res = await submit(plane.app, 'kind: sft\nsteps: 130');
    const id = res.json<RunResource>().id;
    const started = await startRun(plane.store, id, 'w1');
    if (started.status !== 'started') throw new Error('start');
    const { attempt } = started;
    for (let step = 1; step <= 130; step++) {
      await appendStep(plane.store, id, step, { loss: 1 / step }, { attempt });
      await setCheckpoint(plane.store, id, { step, path: `/ckpt/${step}` }, { attempt });
    }
    for (let step = 1; step <= 30; step++) {
      expect((await retireCheckpoint(plane.store, id, step, { attempt })).status).toBe('retired');
    }
    const read = async (query: string) => {
      const steps: number[] = [];
      let pages = 0;
      let cursor: string | null = null;
      let last: CheckpointList | undefined;
      do {
        const url: string = `/v1/runs/${id}/checkpoints?${query}${cursor ? `&cursor=${cursor}` : ''}`;
        const page = await get(url);
        expect(page.statusCode, page.body).toBe(200);
        last = page.json<CheckpointList>();
        steps.push(...last.checkpoints.map((c) => c.step));
        cursor = last.nextCursor;
        pages++;
      } while (cursor !== null);
      return { steps, pages, summary: last.summary };
    };
    const range = (from: number, to: number) =>
      Array.from({ length: to - from + 1 }, (_, i) => from + i);
    // Default: the kept ones, 50 a page, oldest first.
    const kept = await read('');
    expect(kept).toEqual({
      steps: range(31, 130),
      pages: 2,
      summary: { latest: 130, kept: 100, deleted: { count: 30, firstStep: 1, lastStep: 30 } },
    });
    expect((await read('status=deleted&order=desc&limit=7')).steps).toEqual(range(1, 30).reverse());
    expect(await read('status=all&from=25&to=40&limit=5')).toMatchObject({
      steps: range(25, 40),
      pages: 4,
    });
    const first = (
      await get(`/v1/runs/${id}/checkpoints?limit=1&order=desc`)
    ).json<CheckpointList>();
    expect(first.checkpoints.map((c) => [c.step, c.latest, c.metrics?.['loss']])).toEqual([
      [130, true, 1 / 130],
    ]);

    const problem = async (query: string) => {
      const bad = await get(`/v1/runs/${id}/checkpoints?${query}`);
      expect(bad.statusCode).toBe(400);
      expect(String(bad.headers['content-type'])).toMatch(/^application\/problem\+json/);
      const body = bad.json<{ code: string; errors: Array<{ path: string }> }>();
      return [body.code, body.errors[0]?.path];
    };
    expect(await problem('cursor=garbage')).toEqual(['ANNEAL_ERR_VALIDATION', '/query/cursor']);
    // A cursor of another listing (other filters) is refused, not reinterpreted.
    expect(await problem(`status=deleted&cursor=${first.nextCursor}`)).toEqual([
      'ANNEAL_ERR_VALIDATION',
      '/query/cursor',
    ]);
    expect(await problem('from=9&to=3')).toEqual(['ANNEAL_ERR_VALIDATION', '/query/to']);
    expect((await problem('limit=201'))[0]).toBe('ANNEAL_ERR_VALIDATION');
    expect((await problem('status=gone'))[0]).toBe('ANNEAL_ERR_VALIDATION');
  });
});

describe('fork: model.checkpoint {run, step}', () => {
  it('records the parent and a use that keeps the source checkpoint from retention', async () => {
    const { id, attempt } = await trainedRun();
    const fork = await submit(
      plane.app,
      `kind: grpo\nsteps: 2\nmodel: {checkpoint: {run: ${id}, step: 2}}\noptimizer: {learningRate: 0.00003}`,
    );
    expect(fork.statusCode, fork.body).toBe(201);
    const forkRun = fork.json<RunResource>();
    expect(forkRun.parent).toEqual({ run: id, step: 2 });
    expect((await get(`/v1/runs/${forkRun.id}`)).json<RunResource>().parent).toEqual({
      run: id,
      step: 2,
    });
    const list = (await get(`/v1/runs/${id}/checkpoints`)).json<CheckpointList>();
    expect(list.checkpoints[0]?.usedBy).toEqual([forkRun.id]);
    expect(await retireCheckpoint(plane.store, id, 2, { attempt })).toEqual({
      status: 'kept',
      why: `used by ${forkRun.id}`,
    });
    // The final checkpoint form names the source's latest step as the parent.
    const final = await submit(plane.app, `kind: sft\nmodel: {checkpoint: {run: ${id}}}`);
    expect(final.json<RunResource>().parent).toEqual({ run: id, step: 4 });
  });

  it('refuses a step never checkpointed or deleted by retention, naming /model/checkpoint/step', async () => {
    const { id, attempt } = await trainedRun();
    expect((await retireCheckpoint(plane.store, id, 2, { attempt })).status).toBe('retired');
    for (const [step, words] of [
      [3, 'has no checkpoint at step 3'],
      [2, 'deleted its checkpoint at step 2'],
    ] as const) {
      const res = await submit(
        plane.app,
        `kind: sft\nmodel: {checkpoint: {run: ${id}, step: ${step}}}`,
      );
      expect(res.statusCode).toBe(400);
      expect(String(res.headers['content-type'])).toMatch(/^application\/problem\+json/);
      const problem = res.json<{
        code: string;
        errors: Array<{ path: string; message: string }>;
      }>();
      expect(problem.code).toBe('ANNEAL_ERR_UNKNOWN_RESOURCE');
      expect(problem.errors[0]?.path).toBe('/model/checkpoint/step');
      expect(problem.errors[0]?.message).toContain(words);
    }
    // Another tenant's run is not found, whatever the step.
    const beta = await submit(plane.app, `kind: sft\nmodel: {checkpoint: {run: ${id}, step: 4}}`, {
      token: TOKENS.betaSubmitter,
    });
    expect(beta.json<{ errors: Array<{ path: string }> }>().errors[0]?.path).toBe(
      '/model/checkpoint/run',
    );
  });
});

describe('checkpointRetention.keepBest.metric', () => {
  it('must be a step metric of the run kind', async () => {
    const bad = await submit(
      plane.app,
      'kind: sft\ncheckpointRetention: {keepBest: {metric: reward/all}}',
    );
    expect(bad.statusCode).toBe(400);
    expect(bad.json<{ errors: Array<{ path: string }> }>().errors[0]?.path).toBe(
      '/checkpointRetention/keepBest/metric',
    );
    const good = await submit(
      plane.app,
      'kind: grpo\ncheckpointRetention: {keepBest: {metric: reward/all, count: 2}}',
    );
    expect(good.statusCode, good.body).toBe(201);
    const spec = good.json<RunResource>().spec;
    expect(spec.kind === 'grpo' && spec.checkpointRetention).toEqual({
      keepBest: { metric: 'reward/all', order: 'max', count: 2 },
    });
  });
});

describe('GET /v1/runs/{id}/checkpoints/{step}/export', () => {
  it('answers problems for a deleted step, an unknown one, and files it cannot read', async () => {
    const { id, attempt } = await trainedRun();
    expect((await retireCheckpoint(plane.store, id, 2, { attempt })).status).toBe('retired');
    const problem = async (step: number) => {
      const res = await get(`/v1/runs/${id}/checkpoints/${step}/export`);
      expect(String(res.headers['content-type'])).toMatch(/^application\/problem\+json/);
      return { status: res.statusCode, ...res.json<{ code: string; detail: string }>() };
    };
    expect(await problem(2)).toMatchObject({
      status: 404,
      code: 'ANNEAL_ERR_CHECKPOINT_NOT_FOUND',
      detail: expect.stringContaining('deleted'),
    });
    expect(await problem(3)).toMatchObject({
      status: 404,
      code: 'ANNEAL_ERR_CHECKPOINT_NOT_FOUND',
    });
    // Step 4's export was never written under this plane's artifact root.
    const missing = await problem(4);
    expect(missing).toMatchObject({
      status: 409,
      code: 'ANNEAL_ERR_EXPORT_UNAVAILABLE',
      detail: expect.stringContaining('ANNEAL_ARTIFACT_DIR'),
    });
    // Said to a viewer: never where the server keeps its files.
    expect(missing.detail).not.toContain(plane.artifactDir);
    expect(missing.detail).not.toMatch(/(^|[\s(])\/\w/);
  });
});
