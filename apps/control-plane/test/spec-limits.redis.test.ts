// Operator caps on run-spec sizes (operator config `limits`, packages/protocol/src/spec-limits.ts):
// a spec within the schema's maxima but over what a worker can hold is refused at submission,
// 400 ANNEAL_ERR_RUN_SPEC_OVER_LIMIT naming each field and its cap. Before, the GRPO spec
// (groupSize 1024, promptsPerStep 65,536, maxTokens 1,048,576) was accepted and grew the worker
// past 3 GiB.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestPlane, submit, testOperatorConfig, testPlane } from './helpers.ts';

let plane: TestPlane;
let tight: TestPlane;
beforeAll(async () => {
  plane = await testPlane();
  tight = await testPlane({
    operator: testOperatorConfig({
      limits: {
        rolloutsPerStep: 64,
        tokensPerRollout: 1024,
        examplesPerStep: 8,
        tokensPerExample: 512,
        stepMemoryBytes: 350_000,
      },
    }),
  });
});
afterAll(async () => {
  await plane.cleanup();
  await tight.cleanup();
});

interface Problem {
  code: string;
  status: number;
  detail: string;
  errors: Array<{ path: string; message: string }>;
}

describe('run-spec size caps', () => {
  it('refuses the issue’s GRPO spec with the default caps, naming each field and cap', async () => {
    const res = await submit(
      plane.app,
      'kind: grpo\nrollout: {groupSize: 1024, promptsPerStep: 65536, maxTokens: 1048576}\n',
    );
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    const body = res.json() as Problem;
    expect(body.code).toBe('ANNEAL_ERR_RUN_SPEC_OVER_LIMIT');
    expect(body.errors.map((e) => e.path)).toEqual([
      '/rollout/promptsPerStep',
      '/rollout/maxTokens',
      '/rollout',
    ]);
    expect(body.errors[0]?.message).toContain('67108864');
    expect(body.errors[0]?.message).toContain('limits.rolloutsPerStep = 4096');
    expect(body.errors[1]?.message).toContain('limits.tokensPerRollout = 32768');
    expect(body.errors[2]?.message).toContain('limits.stepMemoryBytes = 1073741824');
  });

  it('accepts the defaults and a spec at the caps', async () => {
    expect((await submit(plane.app, 'kind: grpo\n')).statusCode).toBe(201);
    expect(
      (await submit(plane.app, 'kind: sft\nbatchSize: 1024\nmaxSeqLen: 16384\n')).statusCode,
    ).toBe(201);
    const tightOk = await submit(
      tight.app,
      'kind: grpo\nrollout: {groupSize: 2, promptsPerStep: 2, maxTokens: 1024}\n',
    );
    expect(tightOk.statusCode, tightOk.body).toBe(201);
  });

  it.each([
    [
      'kind: grpo\nrollout: {groupSize: 8, promptsPerStep: 9, maxTokens: 16}\n',
      '/rollout/promptsPerStep',
      'rolloutsPerStep = 64',
    ],
    [
      'kind: grpo\nrollout: {groupSize: 2, promptsPerStep: 1, maxTokens: 1025}\n',
      '/rollout/maxTokens',
      'tokensPerRollout = 1024',
    ],
    [
      'kind: grpo\nrollout: {groupSize: 64, promptsPerStep: 1, maxTokens: 1024}\n',
      '/rollout',
      'stepMemoryBytes = 350000',
    ],
    ['kind: sft\nbatchSize: 9\nmaxSeqLen: 64\n', '/batchSize', 'examplesPerStep = 8'],
    ['kind: rm\nbatchSize: 2\nmaxSeqLen: 513\n', '/maxSeqLen', 'tokensPerExample = 512'],
    ['kind: rm\nbatchSize: 8\nmaxSeqLen: 512\n', '/batchSize', 'stepMemoryBytes = 350000'],
    [
      'kind: eval\nbudgets: {maxOutputTokens: 2048}\n',
      '/budgets/maxOutputTokens',
      'tokensPerRollout = 1024',
    ],
  ])('operator caps: %j is refused at %s', async (spec, path, cap) => {
    const res = await submit(tight.app, spec);
    expect(res.statusCode, res.body).toBe(400);
    const body = res.json() as Problem;
    expect(body.code).toBe('ANNEAL_ERR_RUN_SPEC_OVER_LIMIT');
    expect(body.errors).toEqual([{ path, message: expect.stringContaining(`limits.${cap}`) }]);
  });
});
