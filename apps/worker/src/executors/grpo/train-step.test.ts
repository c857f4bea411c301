// trainStep's step math is @anneal/rl's kernel streaming the worker's own step buffers in place
// (what bench/rl measures), and its numbers are the scalar reference's on a hand-computed batch.
import type { Datum, ForwardResult, LossFn } from '@anneal/engines';
import { validateRunSpec, type GrpoSpec } from '@anneal/protocol';
import { stepRunsInPlace, stepTokenMathScalar } from '@anneal/rl';
import { describe, expect, it } from 'vitest';
import { ShiftedTrainerModel, format, rollout } from '../testing/fakes.ts';
import { generatedLayout } from './advantages.ts';
import { trainStep } from './train-step.ts';

const LN2 = Math.LN2;

/** A trainer whose logprob of every sampled token is −1, whatever the sampler said. */
class ConstantTrainerModel extends ShiftedTrainerModel {
  private constant(data: readonly Datum[]): Promise<ForwardResult> {
    const logprobs = data.map((d) => new Float32Array(d.modelInput.length).fill(-1));
    return Promise.resolve({ logprobs, metrics: {} });
  }
  override forward(data: readonly Datum[], lossFn: LossFn): Promise<ForwardResult> {
    this.calls.push({ kind: 'forward', data, lossFn });
    return this.constant(data);
  }
  override forwardBackward(data: readonly Datum[], lossFn: LossFn): Promise<ForwardResult> {
    this.calls.push({ kind: 'forwardBackward', data, lossFn });
    return this.constant(data);
  }
}

const prompt = format.encodePrompt('q?');
const gen = (logprob: number) => ({ tokens: [97], generated: true, logprob });
// sampler logprobs chosen so that r = exp(−1 − logp_infer) is [1, 2 | 0.5]
const rollouts = () => [
  rollout(prompt, [gen(-1), gen(-1 - LN2)]),
  rollout(prompt, [gen(-1 + LN2)]),
];
const adam = {
  learningRate: 1e-3,
  beta1: 0.9,
  beta2: 0.95,
  eps: 1e-8,
  weightDecay: 0,
  gradClipNorm: 1,
};
const parsed = validateRunSpec({ kind: 'grpo' });
if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
const is = (parsed.value as GrpoSpec).importanceSampling; // the defaults: plain token-level IS

describe('trainStep step math', () => {
  it('the layout is the kernel’s step buffers, so the step runs in place', () => {
    const layout = generatedLayout(rollouts());
    expect([...layout.offsets]).toEqual([0, 2, 3]);
    expect(stepRunsInPlace(layout)).toBe(true);
  });

  it('ratios [1, 2 | 0.5], Â = [0.5, −0.5]: hand-computed, and the scalar reference’s', async () => {
    const out = await trainStep(new ConstantTrainerModel(0), {
      rollouts: rollouts(),
      advantages: [0.5, -0.5],
      is,
      reduction: 'sum',
      adam,
    });
    expect(out.tokens).toBe(3);
    expect(out.k1).toBeCloseTo(0, 6); // d = [0, −ln 2, ln 2]
    expect(out.k3).toBeCloseTo((0 + (2 - 1 - LN2) + (0.5 - 1 + LN2)) / 3, 6);
    expect(out.ratioMean).toBeCloseTo(3.5 / 3, 6);
    expect(out.ratioMin).toBeCloseTo(0.5, 6);
    expect(out.ratioMax).toBeCloseTo(2, 6);
    expect(out.objective).toBeCloseTo((0.5 * 1.5 - 0.5 * 0.5) / 2, 6); // 0.25
    expect(out.loss).toBeCloseTo(-0.25, 6);

    const layout = generatedLayout(rollouts());
    layout.logpTrain.fill(-1);
    const reference = stepTokenMathScalar({
      logpTrain: Float32Array.from(layout.logpTrain),
      logpInfer: Float32Array.from(layout.logpInfer),
      offsets: Int32Array.from(layout.offsets),
      advantages: [0.5, -0.5],
    });
    for (const key of ['k1', 'k3', 'ratioMean', 'ratioMin', 'ratioMax', 'objective'] as const)
      expect(out[key], key).toBeCloseTo(reference[key], 6);
    expect(out.tokens).toBe(reference.tokens);
  });

  it('rejects advantages that do not match the rollouts, naming the field', async () => {
    await expect(
      trainStep(new ConstantTrainerModel(0), {
        rollouts: rollouts(),
        advantages: [0.5],
        is,
        reduction: 'sum',
        adam,
      }),
    ).rejects.toThrow('advantages: 1 values for 2 rollouts');
  });
});
