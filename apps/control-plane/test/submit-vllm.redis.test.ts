// Submission against a vLLM inference endpoint: a GRPO run whose LoRA rank exceeds the replicas'
// --max-lora-rank is refused with problem+json before it is queued (protocol resolveRunSpec ->
// operator-config-vllm.ts), not at its first weight sync.
import { afterEach, describe, expect, it } from 'vitest';
import { type TestPlane, submit, testOperatorConfig, testPlane } from './helpers.ts';

let plane: TestPlane | undefined;
afterEach(async () => {
  await plane?.cleanup();
});

function withVllm(maxLoraRank?: number) {
  return testOperatorConfig({
    inference: {
      gen: {
        type: 'vllm',
        replicas: ['http://vllm-0:8000'],
        logprobsMode: 'processed_logprobs',
        ...(maxLoraRank !== undefined && { maxLoraRank }),
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

describe('POST /v1/runs on a vLLM endpoint', () => {
  it('refuses a LoRA rank above maxLoraRank as problem+json naming /lora/rank', async () => {
    plane = await testPlane({ operator: withVllm() });
    const res = await submit(plane.app, 'kind: grpo\n'); // lora.rank 32 > vLLM's default 16
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toContain('application/problem+json');
    const body = res.json();
    expect(body).toMatchObject({ code: 'ANNEAL_ERR_TRAINER_CAPABILITY', status: 400 });
    expect(body.errors).toEqual([
      {
        path: '/lora/rank',
        message: expect.stringContaining(
          "inference endpoint 'gen' loads LoRA adapters up to rank 16",
        ) as unknown,
      },
    ]);
    const ok = await submit(plane.app, 'kind: grpo\nlora: {rank: 16}\n');
    expect(ok.statusCode).toBe(201);
  });

  it('accepts the default rank when the endpoint declares maxLoraRank 32', async () => {
    plane = await testPlane({ operator: withVllm(32) });
    expect((await submit(plane.app, 'kind: grpo\n')).statusCode).toBe(201);
  });
});
