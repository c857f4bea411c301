// Guardrails over REST (docs/guardrails.md): a rule is checked at submission (its metric against
// the step-metric table of the run's kind, its fields against each other), and what the
// guardrails did shows in GET /v1/runs/{id} and GET /v1/runs/{id}/metrics.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { appendStep, rollbackRun, setSafeCheckpoint, startRun } from '@anneal/store';
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

const rules = (...lines: string[]) =>
  ['kind: grpo', 'guardrails:', '  rules:', ...lines.map((l) => `    - ${l}`)].join('\n');

describe('guardrail rules at submission', () => {
  it('refuses a metric the kind does not record, naming the rule field', async () => {
    const res = await submit(
      plane.app,
      rules(
        '{ metric: train_inference_kl, when: above, value: 0.5, action: rollback }',
        '{ metric: accuracy, when: below, value: 0.1, action: stop }',
      ),
    );
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json()).toMatchObject({
      code: 'ANNEAL_ERR_RUN_SPEC_INVALID',
      errors: [
        {
          path: '/guardrails/rules/1/metric',
          message: expect.stringMatching(/^'accuracy' is not a step metric of grpo runs/),
        },
      ],
    });
    // sft records no train-inference KL
    const sft = await submit(
      plane.app,
      'kind: sft\nguardrails: { rules: [{ metric: train_inference_kl, when: nonFinite, action: stop }] }',
    );
    expect(sft.json().errors[0].path).toBe('/guardrails/rules/0/metric');
  });

  it('refuses field combinations with their pointers and lines', async () => {
    const res = await submit(plane.app, rules('{ metric: loss, when: nonFinite, action: notify }'));
    expect(res.statusCode).toBe(400);
    expect(res.json().errors).toEqual([
      {
        path: '/guardrails/rules/0/action',
        message: 'a nonFinite rule must roll back or stop (a non-finite step cannot be recorded)',
        line: 4,
      },
    ]);
  });

  it('accepts a valid rule and stores it in the resolved spec', async () => {
    const res = await submit(
      plane.app,
      rules(
        '{ metric: grad_norm, when: spike, factor: 5, window: 10, forSteps: 2, action: notify }',
      ),
    );
    expect(res.statusCode).toBe(201);
    expect(res.json().spec.guardrails).toEqual({
      defaults: true,
      rules: [
        {
          metric: 'grad_norm',
          when: 'spike',
          factor: 5,
          window: 10,
          forSteps: 2,
          action: 'notify',
        },
      ],
    });
  });
});

describe('what the guardrails did, over REST', () => {
  it('GET /v1/runs/{id} has the firing; /metrics keeps the rolled-back steps beside the history', async () => {
    const id = (await submit(plane.app, 'kind: grpo')).json().id;
    const started = await startRun(plane.store, id, 'w1');
    if (started.status !== 'started') throw new Error('start');
    const fence = { attempt: started.attempt };
    for (const step of [1, 2, 3]) {
      await appendStep(plane.store, id, step, { loss: step, reward: step }, fence);
    }
    await setSafeCheckpoint(plane.store, id, { step: 0, path: null }, fence);
    const rule = {
      name: 'nonfinite-loss',
      metric: 'loss',
      when: 'nonFinite' as const,
      forSteps: 1,
      action: 'rollback' as const,
      origin: 'operator' as const,
    };
    const rolled = await rollbackRun(
      plane.store,
      id,
      {
        key: '0:4:rollback',
        firing: {
          step: 4,
          rule,
          values: [{ step: 4, value: 'NaN' }],
          action: 'rollback',
          reason: "guardrail 'nonfinite-loss' fired at step 4",
          at: new Date().toISOString(),
          restored: { step: 0, path: null },
          rollbacks: 1,
          learningRateScale: 1,
        },
        fired: { step: 4, metrics: { loss: null, reward: 4 }, at: new Date().toISOString() },
      },
      fence,
    );
    expect(rolled.status).toBe('rolled-back');
    await appendStep(plane.store, id, 1, { loss: 0.5, reward: 9 }, { ...fence, rollbacks: 1 });

    const run = (await get(`/v1/runs/${id}`)).json();
    expect(run.guardrails).toMatchObject({
      rollbacks: 1,
      learningRateScale: 1,
      safeCheckpoint: { step: 0, path: null },
      firings: [
        {
          step: 4,
          action: 'rollback',
          rolledBackSteps: [1, 2, 3],
          values: [{ value: 'NaN' }],
          // the rollback count, and until 2027-06-30 its old name
          rollbacks: 1,
          rollback: 1,
        },
      ],
    });
    expect(run.transitions.at(-1)).toMatchObject({ from: 'running', to: 'running' });
    expect(run.lastStep).toBe(1);

    const metrics = (await get(`/v1/runs/${id}/metrics?names=reward&fromStep=2`)).json();
    expect(metrics.steps).toEqual([]);
    expect(
      metrics.rolledBack.map((s: { step: number; metrics: object }) => [s.step, s.metrics]),
    ).toEqual([
      [2, { reward: 2 }],
      [3, { reward: 3 }],
      [4, { reward: 4 }],
    ]);
    const all = (await get(`/v1/runs/${id}/metrics`)).json();
    expect(all.steps).toMatchObject([
      { step: 1, rollbacks: 1, generation: 1, metrics: { loss: 0.5, reward: 9 } },
    ]);
    expect(
      all.rolledBack.map((s: { rolledBack: { fired: boolean } }) => s.rolledBack.fired),
    ).toEqual([false, false, false, true]);
    expect(all.rolledBack[0].rolledBack).toMatchObject({ rollbacks: 1, rollback: 1 });
    expect((await get(`/v1/runs/${id}/metrics`, TOKENS.betaSubmitter)).statusCode).toBe(404);
  });
});
