// The usage routes on their own (docs/usage.md, docs/api.md): query validation with pointers,
// the estimate validating like a submission, and the tenant cap refusing submissions once the
// store has metered the tenant past it (metered here through the store, as a worker would).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  NO_USAGE,
  estimateRun,
  parseRunSpec,
  resolveRunSpec,
  usagePeriods,
} from '@anneal/protocol';
import {
  appendStep,
  getPauseRequest,
  getRun,
  meterSlot,
  readTenantUsage,
  startRun,
} from '@anneal/store';
import { TOKENS, auth, submit, testOperatorConfig, testPlane, type TestPlane } from './helpers.ts';

const prices = {
  promptPerMillionTokens: 1,
  completionPerMillionTokens: 2,
  trainedPerMillionTokens: 3,
  perToolCall: 0.01,
  perJudgeCall: 0.001,
  scoredPerMillionTokens: 0.5,
  perSlotHour: 36,
};
let plane: TestPlane;
beforeEach(async () => {
  plane = await testPlane({
    operator: testOperatorConfig({
      prices,
      tenants: { acme: { budget: { maxUsd: 1, period: 'month' } }, beta: {} },
    }),
  });
});
afterEach(async () => {
  await plane.cleanup();
});

const get = (url: string, token: string = TOKENS.acmeOperator) =>
  plane.app.inject({ method: 'GET', url, headers: auth(token) });

describe('usage routes', () => {
  it('name the bad query field', async () => {
    const wrongForm = await get('/v1/usage?period=day&at=2026-12');
    expect(wrongForm.statusCode).toBe(400);
    expect(wrongForm.json()).toMatchObject({
      code: 'ANNEAL_ERR_VALIDATION',
      errors: [{ path: '/query/at' }],
    });
    const unknown = await get('/v1/usage?tenant=nobody');
    expect(unknown.json()).toMatchObject({
      code: 'ANNEAL_ERR_UNKNOWN_RESOURCE',
      errors: [{ path: '/query/tenant' }],
    });
    const estimate = await plane.app.inject({
      method: 'POST',
      url: '/v1/runs/estimate?promptTokens=-3',
      headers: { ...auth(TOKENS.acmeSubmitter), 'content-type': 'application/yaml' },
      payload: 'kind: sft\n',
    });
    expect(estimate.statusCode).toBe(400);
    expect(estimate.json().errors[0].path).toBe('/query/promptTokens');
  });

  it('estimates like a submission validates, and queues nothing', async () => {
    const estimate = (payload: string) =>
      plane.app.inject({
        method: 'POST',
        url: '/v1/runs/estimate?stepSeconds=10',
        headers: { ...auth(TOKENS.acmeSubmitter), 'content-type': 'application/yaml' },
        payload,
      });
    const bad = await estimate('kind: sft\nbatchSize: 0\n');
    expect(bad.json()).toMatchObject({
      code: 'ANNEAL_ERR_RUN_SPEC_INVALID',
      errors: [{ path: '/batchSize', line: 2 }],
    });
    const yaml = 'kind: sft\nsteps: 3\nbatchSize: 2\nmaxSeqLen: 64\n';
    const ok = await estimate(yaml);
    expect(ok.statusCode).toBe(200);
    const parsed = parseRunSpec(yaml);
    if (!parsed.ok) throw new Error('spec');
    const resolved = resolveRunSpec(parsed.value, plane.operator);
    if (!resolved.ok) throw new Error('resolve');
    expect(ok.json()).toEqual({
      ...estimateRun(resolved.value, prices, { stepSeconds: 10 }),
      prices,
    });
    expect((await get('/v1/runs')).json().runs).toEqual([]);
  });

  it('refuses a tenant at its cap with a problem+json; another tenant still submits', async () => {
    const created = await submit(plane.app, 'kind: sft\nsteps: 2\n');
    expect(created.statusCode).toBe(201);
    const runId = created.json().id as string;
    await startRun(plane.store, runId, 'w1');
    // 100 slot seconds at $36/h = $1: the cap exactly.
    await meterSlot(plane.store, runId, {
      tenant: 'acme',
      slot: { attempt: 1, seconds: 100, usdPerSecond: prices.perSlotHour / 3600 },
      at: new Date(),
    });
    const month = usagePeriods(new Date()).month;
    expect((await readTenantUsage(plane.store, 'acme', month)).costUsd.total).toBeCloseTo(1, 9);
    const refused = await submit(plane.app, 'kind: sft\nsteps: 2\n');
    expect(refused.statusCode).toBe(402);
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(refused.json()).toMatchObject({
      code: 'ANNEAL_ERR_TENANT_BUDGET_EXHAUSTED',
      detail: expect.stringMatching(
        new RegExp(
          `^tenant 'acme' has spent \\$1\\.00 of its \\$1\\.00 month budget \\(${month}\\)`,
        ),
      ),
    });
    expect(
      (await submit(plane.app, 'kind: sft\n', { token: TOKENS.betaSubmitter })).statusCode,
    ).toBe(201);
    const view = await get(`/v1/usage?period=month&at=${month}`);
    expect(view.json().tenants).toEqual([
      expect.objectContaining({
        tenant: 'acme',
        usage: expect.objectContaining({ slotSeconds: 100 }),
        budget: { maxUsd: 1, period: 'month', remainingUsd: 0, reached: true },
      }),
      expect.objectContaining({ tenant: 'beta', budget: null }),
    ]);
    const run = await get(`/v1/runs/${runId}/usage`, TOKENS.acmeViewer);
    expect(run.json()).toMatchObject({ runId, state: 'running', budget: null });
  });

  it('refuses a resume with 402 while a cap the run would spend past holds; nothing changes', async () => {
    const post = (url: string, token: string = TOKENS.acmeSubmitter) =>
      plane.app.inject({ method: 'POST', url, headers: auth(token), payload: {} });
    const paused = (await submit(plane.app, 'kind: sft\nsteps: 2\n')).json().id as string;
    expect((await post(`/v1/runs/${paused}/pause`)).statusCode).toBe(200);
    // Another run of the tenant spends its $1 month cap (as a worker meters it).
    const spender = (await submit(plane.app, 'kind: sft\nsteps: 2\n')).json().id as string;
    await startRun(plane.store, spender, 'w1');
    await meterSlot(plane.store, spender, {
      tenant: 'acme',
      slot: { attempt: 1, seconds: 100, usdPerSecond: prices.perSlotHour / 3600 },
      at: new Date(),
    });
    const refused = await post(`/v1/runs/${paused}/resume`);
    expect(refused.statusCode).toBe(402);
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(refused.json()).toMatchObject({
      code: 'ANNEAL_ERR_TENANT_BUDGET_EXHAUSTED',
      detail: expect.stringMatching(/^tenant 'acme' has spent \$1\.00 of its \$1\.00 month budget/),
    });
    expect((await getRun(plane.store, paused))?.state).toBe('paused');
    // A run's own budget (tenant beta has no cap): spent, so a resume that would withdraw the
    // pause its worker is about to act on is refused, and the pause stays pending.
    const own = (
      await submit(plane.app, 'kind: sft\nsteps: 4\nbudget:\n  maxUsd: 0.5\n', {
        token: TOKENS.betaSubmitter,
      })
    ).json().id as string;
    await startRun(plane.store, own, 'w2');
    await appendStep(
      plane.store,
      own,
      1,
      { loss: 1 },
      {
        attempt: 1,
        usage: {
          tenant: 'beta',
          step: {
            usage: { ...NO_USAGE, trainedTokens: 200_000 },
            costUsd: { ...NO_USAGE, trainedTokens: 0.6, total: 0.6 },
          },
          maxUsd: 0.5,
          at: new Date(),
        },
      },
    );
    expect((await post(`/v1/runs/${own}/pause`, TOKENS.betaSubmitter)).statusCode).toBe(202);
    const ownRefused = await post(`/v1/runs/${own}/resume`, TOKENS.betaSubmitter);
    expect(ownRefused.statusCode).toBe(402);
    expect(ownRefused.json()).toMatchObject({
      code: 'ANNEAL_ERR_RUN_BUDGET_EXHAUSTED',
      detail: expect.stringMatching(/has spent \$0\.60 of its \$0\.50 budget \(budget\.maxUsd\)/),
    });
    expect(await getPauseRequest(plane.store, own)).not.toBeNull();
  });
});
