// The run estimate is a ceiling on what a pipelined GRPO run is metered (docs/usage.md
// "Estimates"): real grpo executor, embedded engines (the untrained tiny model seldom stops within
// 8 tokens, so rollouts run to maxTokens: the worst case), through the queue and the store's
// metering.
// At maxPolicyLag 1 and 2 (reference cache off: every step samples its reference groups) each
// step's metered completion tokens, trained tokens and tool calls, and the run's, stay at or under
// POST /v1/runs/estimate's (estimateRun). The old estimate left out the mismatch probe of a
// lagged step (1,024 completion tokens a step were promised, 1,096 metered): here a lagged step
// is metered more than the policy and reference terms alone, so the old estimate fails.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { STEP_USAGE_KEYS, estimateRun, grpoStepTerms, stepUsage } from '@anneal/protocol';
import { getRun, readRunUsage, readSteps } from '@anneal/store';
import { type TestEnv, eventually, resolveSpec, testEnv } from './helpers.ts';

let env: TestEnv;
beforeEach(async () => {
  env = await testEnv();
});
afterEach(async () => {
  await env.cleanup();
});

const STEPS = 3;
const specOf = (lag: number) =>
  [
    'kind: grpo',
    `steps: ${STEPS}`,
    'checkpointInterval: 3',
    'seed: 11',
    `rollout: { groupSize: 4, promptsPerStep: 2, maxTokens: 8, maxPolicyLag: ${lag} }`,
    'reference: { cacheGenerations: false }',
  ].join('\n');

describe('the estimate is a ceiling on a pipelined GRPO run', () => {
  it('lag 1 and lag 2: every step metered at or under the estimate', async () => {
    await env.startWorker({ slots: 2 }, { executors: undefined, factories: {} });
    const runs = await Promise.all(
      [1, 2].map(async (lag) => ({ lag, id: await env.submit(specOf(lag)) })),
    );
    for (const { id } of runs) {
      await eventually(
        async () => {
          const run = await getRun(env.store, id);
          if (run?.state === 'failed') throw new Error(`run failed: ${run.error}`);
          return run?.state === 'succeeded';
        },
        600_000,
        `run ${id} succeeded`,
      );
    }
    for (const { lag, id } of runs) {
      const spec = resolveSpec(specOf(lag), env.operatorConfig);
      if (spec.kind !== 'grpo') throw new Error('grpo spec');
      const estimate = estimateRun(spec, env.operatorConfig.prices);
      const ceiling = estimate.perStep[0]!.usage;
      const steps = await readSteps(env.store, id);
      expect(steps).toHaveLength(STEPS);
      const metered = steps.map((s) => stepUsage(s.metrics));
      console.log(
        `lag ${lag}: completion tokens per step metered ${metered.map((u) => u.completionTokens).join(', ')}; estimate ${ceiling.completionTokens}`,
      );
      expect(steps.at(-1)?.metrics['policy_lag/max']).toBe(lag);
      // The probe was sampled and billed: a lagged step is metered more than its policy and
      // reference rollouts can be (the old estimate).
      const { policy, reference } = grpoStepTerms(spec, 0);
      const withoutProbe = policy!.completionTokens + reference!.completionTokens;
      expect(Math.max(...metered.map((u) => u.completionTokens))).toBeGreaterThan(withoutProbe);
      for (const usage of metered) {
        expect(usage.completionTokens).toBeLessThanOrEqual(ceiling.completionTokens);
        expect(usage.trainedTokens).toBeLessThanOrEqual(ceiling.trainedTokens);
        expect(usage.toolCalls).toBeLessThanOrEqual(ceiling.toolCalls);
      }
      const total = (await readRunUsage(env.store, id)).usage;
      expect(total.completionTokens).toBeLessThanOrEqual(estimate.total.usage.completionTokens);
      expect(total.completionTokens).toBe(
        steps.reduce((sum, s) => sum + (s.metrics[STEP_USAGE_KEYS.completionTokens] ?? 0), 0),
      );
    }
  }, 900_000);
});
