import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { grpoObjective, grpoObjectiveGradient, type GrpoBatch } from './grpo-objective.ts';
import { perTokenAdvantages, tokenAdvantageScale, type LossReduction } from './token-advantages.ts';

const LN2 = Math.LN2;
// Rollout 0: ratios [1, 2], Â = 0.5; rollout 1: ratio [0.5], Â = −0.5; G = 2.
// J = ½ (½ (1 + 2) · 0.5 + 1 · 0.5 · (−0.5)) = ½ (0.75 − 0.25) = 0.25 (docs/recipe.md §2).
const fixture: GrpoBatch = {
  logpTrain: [-1, -LN2, -2 * LN2],
  logpInfer: [-1, -2 * LN2, -LN2],
  offsets: Int32Array.of(0, 2, 3),
  advantages: [0.5, -0.5],
};

describe('grpoObjective / gradient (docs/recipe.md §2)', () => {
  it('hand-computed J and ∂J/∂logp_train = r · Â / (G |o_i|)', () => {
    expect(grpoObjective(fixture)).toBeCloseTo(0.25, 12);
    const gradient = grpoObjectiveGradient(fixture);
    [0.125, 0.25, -0.125].forEach((value, t) => expect(gradient[t]).toBeCloseTo(value, 12));
  });

  it('an empty rollout adds nothing but still counts in G', () => {
    const batch = { ...fixture, offsets: Int32Array.of(0, 2, 3, 3), advantages: [0.5, -0.5, 7] };
    expect(grpoObjective(batch)).toBeCloseTo((0.75 - 0.25) / 3, 12);
  });

  it('rejects advantages that do not match the rollouts', () => {
    expect(() => grpoObjective({ ...fixture, advantages: [1] })).toThrow(/advantages/);
  });
});

describe('perTokenAdvantages (docs/engines.md "Reduction")', () => {
  it.each([
    { reduction: 'sum' as const, expected: [0.5 / 4, 0.5 / 4, -0.5 / 2] }, // Â / (N |o_i|)
    { reduction: 'mean_per_sequence' as const, expected: [0.5, 0.5, -0.5] }, // Â
  ])('$reduction', ({ reduction, expected }) => {
    const tokenAdvantages = perTokenAdvantages(fixture.advantages, fixture.offsets, reduction);
    expected.forEach((value, t) => expect(tokenAdvantages[t]).toBeCloseTo(value, 7));
  });

  it('zero tokens or sequences give scale 0; unknown reductions throw', () => {
    expect(tokenAdvantageScale('sum', 4, 0)).toBe(0);
    expect(() => tokenAdvantageScale('mean' as LossReduction, 1, 1)).toThrow(/reduction/);
  });
});

// A random batch: 1–4 rollouts of 1–6 tokens, logprobs in [−4, 0], advantages in [−1, 1].
const batchArb = fc
  .array(
    fc.record({
      tokens: fc.array(
        fc.tuple(
          fc.double({ min: -4, max: 0, noNaN: true }),
          fc.double({ min: -4, max: 0, noNaN: true }),
        ),
        {
          minLength: 1,
          maxLength: 6,
        },
      ),
      advantage: fc.double({ min: -1, max: 1, noNaN: true }),
    }),
    { minLength: 1, maxLength: 4 },
  )
  .map((rollouts): GrpoBatch => {
    const offsets = new Int32Array(rollouts.length + 1);
    rollouts.forEach((r, i) => (offsets[i + 1] = offsets[i]! + r.tokens.length));
    const tokens = rollouts.flatMap((r) => r.tokens);
    return {
      logpTrain: Float64Array.from(tokens, (t) => t[0]),
      logpInfer: Float64Array.from(tokens, (t) => t[1]),
      offsets,
      advantages: rollouts.map((r) => r.advantage),
    };
  });

function withTokenShift(batch: GrpoBatch, t: number, h: number): GrpoBatch {
  const logpTrain = Float64Array.from(batch.logpTrain);
  logpTrain[t]! += h;
  return { ...batch, logpTrain };
}

/** The loss a backend computes from per-token advantages A, given the loss mask as `weights`
 * (w = 1 on every generated token here): ℓ_{i,t} = −w·r_{i,t}·A_{i,t}; 'sum' adds them,
 * 'mean_per_sequence' (SkyRL JAX, skyrl/backends/jax.py loss_for_lora + AccumulatedGradients)
 * divides each datum's sum by Σ_t w = |o_i| and the total by the N datums. */
function backendLoss(
  batch: GrpoBatch,
  tokenAdvantages: Float32Array,
  reduction: LossReduction,
): number {
  let loss = 0;
  for (let i = 0; i + 1 < batch.offsets.length; i++) {
    const start = batch.offsets[i]!;
    const end = batch.offsets[i + 1]!;
    let sequenceLoss = 0;
    for (let t = start; t < end; t++) {
      sequenceLoss += -Math.exp(batch.logpTrain[t]! - batch.logpInfer[t]!) * tokenAdvantages[t]!;
    }
    loss += reduction === 'sum' ? sequenceLoss : sequenceLoss / Math.max(end - start, 1e-9);
  }
  return reduction === 'sum' ? loss : loss / (batch.offsets.length - 1);
}

describe('properties', () => {
  const h = 1e-6;

  it('∇J matches central finite differences', () => {
    fc.assert(
      fc.property(batchArb, (batch) => {
        const gradient = grpoObjectiveGradient(batch);
        for (let t = 0; t < batch.logpTrain.length; t++) {
          const numeric =
            (grpoObjective(withTokenShift(batch, t, h)) -
              grpoObjective(withTokenShift(batch, t, -h))) /
            (2 * h);
          expect(Math.abs(numeric - gradient[t]!)).toBeLessThan(1e-6);
        }
      }),
    );
  });

  it.each(['sum', 'mean_per_sequence'] as const)(
    'per-token scaling makes a %s backend optimise J: loss = −J and ∇loss = −∇J',
    (reduction) => {
      fc.assert(
        fc.property(batchArb, (batch) => {
          const tokenAdvantages = perTokenAdvantages(batch.advantages, batch.offsets, reduction);
          const objective = grpoObjective(batch);
          // per-token advantages are float32 (TensorData), hence a relative tolerance
          const tolerance =
            1e-6 *
            (1 +
              Math.abs(objective) +
              Math.max(
                ...Array.from(batch.logpTrain, (lp, t) => Math.exp(lp - batch.logpInfer[t]!)),
              ));
          expect(Math.abs(backendLoss(batch, tokenAdvantages, reduction) + objective)).toBeLessThan(
            tolerance,
          );
          const gradient = grpoObjectiveGradient(batch);
          for (let t = 0; t < batch.logpTrain.length; t++) {
            const lossPlus = backendLoss(withTokenShift(batch, t, h), tokenAdvantages, reduction);
            const lossMinus = backendLoss(withTokenShift(batch, t, -h), tokenAdvantages, reduction);
            expect(Math.abs((lossPlus - lossMinus) / (2 * h) + gradient[t]!)).toBeLessThan(1e-5);
          }
        }),
      );
    },
  );
});
