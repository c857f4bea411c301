// The worker releases every weight name a run loaded on its (shared) inference engine when the
// run ends, succeeded or failed, so vLLM does not keep dead runs' LoRA adapters loaded.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { getRun } from '@anneal/store';
import { STUB_EMBEDDED, STUB_FACTORIES, stubInference } from '../../test/fixtures/engines.ts';
import { type TestEnv, eventually, testEnv } from '../../test/helpers.ts';
import { RunSetupError } from '../errors.ts';
import type { Executor } from '../executors/types.ts';

let env: TestEnv;
beforeEach(async () => {
  env = await testEnv();
});
afterEach(async () => {
  await env.cleanup();
});

describe('run end releases served weights', () => {
  it('unloads the names the run loaded, after success and after failure', async () => {
    const released: string[] = [];
    const inference = {
      ...stubInference(),
      releaseWeights: async (name: string) => void released.push(name),
    };
    const grpo: Executor = async (ctx) => {
      await ctx.resources.inference.loadWeights({ name: `${ctx.runId}-reference`, path: '/r' });
      await ctx.resources.inference.loadWeights({ name: `${ctx.runId}-policy`, path: '/p0' });
      await ctx.resources.inference.loadWeights({ name: `${ctx.runId}-policy`, path: '/p1' });
      if (ctx.spec.labels['fail'] === 'yes') throw new RunSetupError('boom'); // fails without retries;
      return { summary: {}, finalCheckpoint: null, stopped: false };
    };
    await env.startWorker(
      {},
      {
        executors: { grpo },
        factories: {
          ...STUB_FACTORIES,
          embedded: { ...STUB_EMBEDDED, inference: async () => inference },
        },
      },
    );
    const ok = await env.submit('kind: grpo');
    await eventually(async () => (await getRun(env.store, ok))?.state === 'succeeded');
    await eventually(() => released.length === 2, 5_000, 'released');
    expect(released).toEqual([`${ok}-reference`, `${ok}-policy`]);
    const bad = await env.submit('kind: grpo\nlabels: { fail: "yes" }');
    await eventually(async () => (await getRun(env.store, bad))?.state === 'failed');
    await eventually(() => released.length === 4, 5_000, 'released after failure');
    expect(released.slice(2)).toEqual([`${bad}-reference`, `${bad}-policy`]);
    expect(inference.closed).toBe(false); // the shared engine stays open
  });
});
