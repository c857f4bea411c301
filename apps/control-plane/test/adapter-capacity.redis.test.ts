// Adapter capacity through the API (docs/operations.md "Adapter capacity"): a run's demand is
// computed at submission and shown on the run; a run that could never fit is refused; a run
// that does not fit now waits queued and GET /v1/runs/{id} says for what.
import type { OperatorConfig } from '@anneal/protocol';
import { readAdapterSlots, startRun } from '@anneal/store';
import { afterEach, describe, expect, it } from 'vitest';
import { reconcile } from '../src/jobs/reconcile.ts';
import { TOKENS, type TestPlane, auth, submit, testOperatorConfig, testPlane } from './helpers.ts';

let plane: TestPlane | undefined;
afterEach(async () => {
  await plane?.cleanup();
});

function withCapacity(maxLoras: number | undefined): OperatorConfig {
  return testOperatorConfig({
    inference: {
      gen: {
        type: 'vllm',
        replicas: ['http://vllm-0:8000'],
        logprobsMode: 'processed_logprobs',
        maxLoraRank: 32,
        ...(maxLoras !== undefined && { maxLoras }),
      },
    },
    defaults: {
      pool: 'default',
      inference: 'gen',
      trainer: 'embedded',
      search: 'local',
      baseModel: 'tiny',
    },
  });
}

const get = (id: string) =>
  plane!.app.inject({
    method: 'GET',
    url: `/v1/runs/${id}`,
    headers: auth(TOKENS.acmeSubmitter),
  });

describe('adapter capacity at submission', () => {
  it("shows a GRPO run's demand: reference + maxPolicyLag + 1 versions + one during a sync", async () => {
    plane = await testPlane({ operator: withCapacity(8) });
    const res = await submit(plane.app, 'kind: grpo\nrollout: {maxPolicyLag: 2}\n');
    expect(res.statusCode).toBe(201);
    const demand = [
      {
        role: 'inference',
        endpoint: 'gen',
        slots: 5,
        detail: 'shared reference 1 + policy versions 3 (maxPolicyLag + 1) + sync 1',
        reference: expect.stringMatching(/^ref-[0-9a-f]{16}$/) as unknown,
      },
    ];
    expect(res.json().adapterDemand).toEqual(demand);
    expect((await get(res.json().id as string)).json().adapterDemand).toEqual(demand);
  });

  it('refuses a run that needs more slots than the endpoint has, naming the endpoint', async () => {
    plane = await testPlane({ operator: withCapacity(4) });
    const res = await submit(plane.app, 'kind: grpo\nrollout: {maxPolicyLag: 3}\n');
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(res.json()).toMatchObject({
      code: 'ANNEAL_ERR_RUN_SPEC_OVER_LIMIT',
      errors: [
        {
          path: '/endpoints/inference',
          message: expect.stringContaining(
            "inference endpoint 'gen' holds 4 adapter slots (maxLoras) and this run needs 6",
          ) as unknown,
        },
      ],
    });
  });

  it('a run that does not fit now waits queued, and the run resource says for what', async () => {
    plane = await testPlane({ operator: withCapacity(8) });
    await reconcile(plane.store, plane.operator);
    expect((await readAdapterSlots(plane.store, 'inference', 'gen')).slots).toBe(8);
    const first = (await submit(plane.app, 'kind: grpo\nrollout: {maxPolicyLag: 3}\n')).json();
    // Another start (LoRA rank): a reference of its own.
    const second = (await submit(plane.app, 'kind: grpo\nlora: {rank: 16}\n')).json();
    expect((await startRun(plane.store, first.id as string, 'w1')).status).toBe('started');
    expect((await startRun(plane.store, second.id as string, 'w2')).status).toBe('blocked');
    const waiting = (await get(second.id as string)).json();
    expect(waiting.state).toBe('queued');
    expect(waiting.waitingReason).toBe(
      `waiting for 3 adapter slots on inference endpoint 'gen': 6 of 8 held by runs ${first.id} (5) and 1 shared reference (1 each)`,
    );
  });

  it('runs of one tenant from one start share a reference; another tenant’s never', async () => {
    plane = await testPlane({ operator: withCapacity(8) });
    const demandOf = async (spec: string, token: string = TOKENS.acmeSubmitter) => {
      const res = await submit(plane!.app, spec, { token });
      expect(res.statusCode, res.body).toBe(201);
      return (res.json().adapterDemand as Array<{ reference?: string }>)[0]?.reference;
    };
    const a = await demandOf('kind: grpo\nseed: 1\n');
    expect(await demandOf('kind: grpo\nseed: 2\nrollout: {maxPolicyLag: 1}\n')).toBe(a);
    expect(await demandOf('kind: grpo\nlora: {rank: 16}\n')).not.toBe(a);
    const beta = await demandOf('kind: grpo\nseed: 1\n', TOKENS.betaSubmitter);
    expect(beta).toMatch(/^ref-[0-9a-f]{16}$/);
    expect(beta).not.toBe(a);
  });

  it('an endpoint whose capacity is no longer declared admits every run after a restart', async () => {
    plane = await testPlane({ operator: withCapacity(8) });
    await reconcile(plane.store, plane.operator);
    await reconcile(plane.store, withCapacity(undefined));
    expect((await readAdapterSlots(plane.store, 'inference', 'gen')).slots).toBeNull();
  });
});
