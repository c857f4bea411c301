// The mismatch probe measures what the batch would (docs/recipe.md §2.6): at lag 0, where both
// exist, the probe's mismatch_kl against the fresh batch's true k3 under a train–inference
// mismatch injected only after tool results, and under one that grows with the context
// (test/executors/mismatch-fakes.ts: the true k3 of any rollouts is computed by hand).
import { MIN_PROBE_ROLLOUTS, MISMATCH_PROBE_FRACTION } from '@anneal/protocol';
import { runRollouts } from '@anneal/envs';
import { describe, expect, it } from 'vitest';
import { format } from '../../../test/executors/fakes.ts';
import {
  MismatchTrainerModel,
  MultiTurnInference,
  afterToolResult,
  growingWithContext,
  mismatchK3,
  multiTurnEnv,
  type Mismatch,
} from '../../../test/executors/mismatch-fakes.ts';
import { samplingSeed } from '../common/sampling-seed.ts';
import { probeMismatch, probeSize, sampleMismatchProbe } from './mismatch-probe.ts';
import { PolicyVersions } from './policy-versions.ts';

const PROMPTS = Array.from({ length: 16 }, (_, i) => format.encodePrompt(`question ${i}?`));
const GROUP = 8;

/** Step 1 of a run seeded `seed`: the fresh batch (16 prompts × 8), its true k3, the probe's. */
async function probeAgainstFresh(mismatch: Mismatch, seed: number, fraction: number) {
  const engine = new MultiTurnInference();
  const env = multiTurnEnv(engine);
  const trainer = new MismatchTrainerModel(mismatch);
  const batch = (
    await runRollouts(
      env,
      PROMPTS.map((prompt, g) => ({
        prompt,
        n: GROUP,
        seed: samplingSeed(seed, `rollout:1:${g}`),
      })),
    )
  ).flat();
  const versions = new PolicyVersions(
    { inference: engine, model: trainer },
    { version: 0, name: 'policy', path: 'mem://sampler/v0', policyExport: false },
  );
  const probe = await sampleMismatchProbe({
    env,
    versions,
    prompts: PROMPTS,
    batch: {
      rollouts: batch.length,
      generatedTokens: batch.reduce((n, r) => n + r.generatedTokens, 0),
    },
    fraction,
    seed,
    step: 1,
  });
  const probed = await probeMismatch(trainer, probe, 1);
  return { batch, probe, fresh: mismatchK3(batch, mismatch), probed: probed! };
}

const SEEDS = Array.from({ length: 24 }, (_, i) => i + 1);

describe('mismatch probe', () => {
  it('is sized by tokens: 1/8 of the batch by default, in whole rollouts of its mean length, at least 32', () => {
    expect(MISMATCH_PROBE_FRACTION).toBe(0.125);
    expect(MIN_PROBE_ROLLOUTS).toBe(32);
    expect(probeSize({ rollouts: 512, generatedTokens: 51_200 }, 0.125)).toEqual({
      tokens: 6400,
      rollouts: 64,
    });
    expect(probeSize({ rollouts: 128, generatedTokens: 12_800 }, 0.125)).toEqual({
      tokens: 1600,
      rollouts: 32,
    });
    expect(probeSize({ rollouts: 4, generatedTokens: 10 }, 0.125)).toEqual({
      tokens: 2,
      rollouts: 4,
    });
    expect(probeSize({ rollouts: 4, generatedTokens: 0 }, 0.125)).toEqual({
      tokens: 0,
      rollouts: 0,
    });
  });

  it.each([
    ['after tool results', afterToolResult(0.3)],
    ['growing with the context', growingWithContext(2e-4)],
  ] as const)(
    'reads the batch’s mismatch %s: probe/fresh within 0.9–1.1 at lag 0, each step within its standard error',
    async (_name, mismatch) => {
      const fraction = MISMATCH_PROBE_FRACTION;
      let probeSum = 0;
      let freshSum = 0;
      for (const seed of SEEDS) {
        const { batch, probe, fresh, probed } = await probeAgainstFresh(mismatch, seed, fraction);
        // the probe is the batch's kind of rollout: multi-turn, with tool results, whole
        expect(probe.some((r) => r.toolCalls > 0)).toBe(true);
        expect(probe.every((r) => r.finish === 'answer')).toBe(true);
        const generated = batch.reduce((n, r) => n + r.generatedTokens, 0);
        expect(probe).toHaveLength(
          probeSize({ rollouts: batch.length, generatedTokens: generated }, fraction).rollouts,
        );
        // scored exactly: the probe's own true k3, to float32 precision
        const truth = mismatchK3(probe, mismatch);
        expect(probed.k3 / truth.k3).toBeCloseTo(1, 5);
        // the two are independent samples of the same version's rollouts: they differ by what
        // their standard errors (docs/recipe.md §2.6) allow: 3.5 σ, the two-sided bound the
        // largest of 24 normal deviations stays under with probability 0.99 (Bonferroni)
        const se = Math.hypot(truth.stderr, fresh.stderr);
        expect(Math.abs(probed.k3 - fresh.k3), `seed ${seed}`).toBeLessThan(3.5 * se);
        probeSum += probed.k3;
        freshSum += fresh.k3;
      }
      // over the steps, the probe reads what the fresh batches read
      const ratio = probeSum / freshSum;
      expect(ratio).toBeGreaterThan(0.9);
      expect(ratio).toBeLessThan(1.1);
    },
  );
});
