import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { appendStep, finishRun, heartbeatWorker, readEvents, startRun } from '@anneal/store';
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

describe('GET /v1/runs/{id}', () => {
  it('returns the run with transitions and why it is waiting', async () => {
    const id = (await submit(plane.app, 'kind: sft\nsteps: 2')).json().id;
    const res = await get(`/v1/runs/${id}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      id,
      state: 'queued',
      waitingReason: "no worker online in pool 'default'",
      transitions: [{ from: null, to: 'queued', reason: 'submitted' }],
    });
    await heartbeatWorker(plane.store, {
      id: 'w1',
      pool: 'default',
      slots: 1,
      busy: 1,
      runs: [],
      startedAt: new Date().toISOString(),
    });
    expect((await get(`/v1/runs/${id}`)).json().waitingReason).toBe(
      "waiting for a free slot in pool 'default'",
    );
  });

  it("answers 404 for another tenant's run, and 400 for a malformed id", async () => {
    const id = (await submit(plane.app, 'kind: sft')).json().id;
    const other = await get(`/v1/runs/${id}`, TOKENS.betaSubmitter);
    expect(other.statusCode).toBe(404);
    expect(other.json()).toMatchObject({ code: 'ANNEAL_ERR_RUN_NOT_FOUND', status: 404 });
    expect((await get(`/v1/runs/${id}/metrics`, TOKENS.betaSubmitter)).statusCode).toBe(404);
    const cancel = await plane.app.inject({
      method: 'POST',
      url: `/v1/runs/${id}/cancel`,
      headers: auth(TOKENS.betaSubmitter),
    });
    expect(cancel.statusCode).toBe(404);
    const malformed = await get('/v1/runs/not-a-run');
    expect(malformed.json()).toMatchObject({
      code: 'ANNEAL_ERR_VALIDATION',
      errors: [{ path: '/params/id' }],
    });
  });
});

describe('POST /v1/runs/{id}/cancel: who cancelled', () => {
  const cancel = (id: string, body: object) =>
    plane.app.inject({
      method: 'POST',
      url: `/v1/runs/${id}/cancel`,
      headers: { ...auth(TOKENS.acmeSubmitter), 'content-type': 'application/json' },
      payload: body,
    });
  const lastTransition = async (id: string) =>
    (await get(`/v1/runs/${id}`))
      .json<{ transitions: Record<string, unknown>[] }>()
      .transitions.at(-1);
  // What a submitter might write to pass their cancel off as someone else's.
  const IMPERSONATION = 'cancelled by ops-oncall (operator)';

  it('a waiting run: the reason is the caller’s text as written, the principal recorded apart', async () => {
    const id = (await submit(plane.app, 'kind: sft')).json().id;
    expect((await cancel(id, { reason: IMPERSONATION })).statusCode).toBe(200);
    expect(await lastTransition(id)).toMatchObject({
      to: 'cancelled',
      reason: IMPERSONATION,
      principal: 'acme-submitter',
    });
    const events = await readEvents(plane.store, id);
    expect(events.at(-1)?.event).toMatchObject({ type: 'run:state', principal: 'acme-submitter' });

    const plain = (await submit(plane.app, 'kind: sft')).json().id;
    await cancel(plain, {});
    expect(await lastTransition(plain)).toMatchObject({
      reason: 'cancel requested',
      principal: 'acme-submitter',
    });
  });

  it('a running run: the worker’s cancelled transition carries who asked and their text', async () => {
    const id = (await submit(plane.app, 'kind: sft')).json().id;
    await startRun(plane.store, id, 'w1');
    expect((await cancel(id, { reason: IMPERSONATION })).statusCode).toBe(202);
    // As the worker ends it at its next step boundary (outcome.ts).
    await finishRun(
      plane.store,
      id,
      { state: 'cancelled', reason: 'cancelled: cancel requested' },
      'w1',
    );
    expect(await lastTransition(id)).toMatchObject({
      from: 'running',
      to: 'cancelled',
      reason: IMPERSONATION,
      principal: 'acme-submitter',
      workerId: 'w1',
    });
  });
});

describe('JSON bodies the parser refuses', () => {
  it.each([
    ['malformed JSON', '{"reason": '],
    ['a __proto__ key', '{"__proto__": {"x": 1}}'],
  ])('answer 400 problem+json on cancel and drain for %s', async (_, payload) => {
    const id = (await submit(plane.app, 'kind: sft')).json().id;
    for (const url of [`/v1/runs/${id}/cancel`, '/v1/workers/w1/drain']) {
      const res = await plane.app.inject({
        method: 'POST',
        url,
        headers: { ...auth(TOKENS.acmeOperator), 'content-type': 'application/json' },
        payload,
      });
      expect(res.statusCode, url).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.json()).toMatchObject({ code: 'ANNEAL_ERR_VALIDATION' });
    }
  });
});

describe('GET /v1/runs', () => {
  it('lists only the tenant’s runs, filtered, with cursor pagination', async () => {
    const a = (await submit(plane.app, 'kind: sft\nlabels: {exp: a}')).json().id;
    const b = (await submit(plane.app, 'kind: grpo\nlabels: {exp: b}')).json().id;
    const c = (await submit(plane.app, 'kind: grpo\nlabels: {exp: a}')).json().id;
    await submit(plane.app, 'kind: grpo', { token: TOKENS.betaSubmitter });
    const all = (await get('/v1/runs')).json();
    expect(new Set(all.runs.map((r: { id: string }) => r.id))).toEqual(new Set([a, b, c]));
    expect(
      (await get('/v1/runs?kind=grpo&label=exp=a')).json().runs.map((r: { id: string }) => r.id),
    ).toEqual([c]);
    const page = (await get('/v1/runs?limit=2')).json();
    expect(page.runs).toHaveLength(2);
    const rest = (await get(`/v1/runs?limit=2&cursor=${page.nextCursor}`)).json();
    expect(rest.runs).toHaveLength(1);
    expect(rest.nextCursor).toBeNull();
    const bad = await get('/v1/runs?state=sleeping&limit=0');
    expect(bad.statusCode).toBe(400);
    expect(
      bad
        .json()
        .errors.map((e: { path: string }) => e.path)
        .sort(),
    ).toEqual(['/query/limit', '/query/state']);
    expect((await get('/v1/runs?bogus=1')).json().errors[0]).toEqual({
      path: '/query/bogus',
      message: "unknown field 'bogus'",
    });
  });
});

describe('GET /v1/runs/{id}/metrics', () => {
  it('returns per-step history filtered by names and fromStep', async () => {
    const id = (await submit(plane.app, 'kind: grpo')).json().id;
    await startRun(plane.store, id, 'w1');
    for (const step of [1, 2, 3])
      await appendStep(plane.store, id, step, { reward: step, kl: 0.001 * step });
    await appendStep(plane.store, id, 2, { reward: 99, kl: 99 });
    const res = (await get(`/v1/runs/${id}/metrics?names=reward&fromStep=2`)).json();
    expect(res.runId).toBe(id);
    expect(res.steps.map((s: { step: number; metrics: object }) => [s.step, s.metrics])).toEqual([
      [2, { reward: 2 }],
      [3, { reward: 3 }],
    ]);
  });
});
