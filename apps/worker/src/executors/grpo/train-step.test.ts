// trainStep's step math is @anneal/rl's kernel streaming the worker's own step buffers in place
// (what bench/rl measures), and its numbers are the scalar reference's on a hand-computed batch.
import type { Datum, ForwardResult, LossFn } from '@anneal/engines';
import { validateRunSpec, type GrpoSpec } from '@anneal/protocol';
import { stepRunsInPlace, stepTokenMathScalar } from '@anneal/rl';
import { describe, expect, it } from 'vitest';
import { ShiftedTrainerModel, format, rollout } from '../../../test/executors/fakes.ts';
import { generatedLayout } from './advantages.ts';
import { trainStep } from './train-step.ts';

const LN2 = Math.LN2;

/** A trainer whose logprob of every sampled token is `logprob` (−1), whatever the sampler said. */
class ConstantTrainerModel extends ShiftedTrainerModel {
  constructor(
    shift: number,
    private readonly logprob = -1,
  ) {
    super(shift);
  }
  private constant(data: readonly Datum[]): Promise<ForwardResult> {
    const logprobs = data.map((d) => new Float32Array(d.modelInput.length).fill(this.logprob));
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
      step: 1,
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
        step: 1,
        rollouts: rollouts(),
        advantages: [0.5],
        is,
        reduction: 'sum',
        adam,
      }),
    ).rejects.toThrow('advantages: 1 values for 2 rollouts');
  });
});

/** The advantages the forward_backward call sent, one array per datum. */
const sentAdvantages = (model: ShiftedTrainerModel) =>
  model.calls
    .find((c) => c.kind === 'forwardBackward')!
    .data.map((d) => [...d.lossFnInputs['advantages']!]);

describe('trainStep IS options', () => {
  it('truncate + mask: a masked token is not also counted as truncated', async () => {
    // r = exp(−1 − logp_infer) = [1, 3 | 0.25, 1.8]; mask [0.5, 2] drops 3 and 0.25, and TIS at
    // 1.5 clips only the kept 1.8 (3 is above clipMax too, but it is gone)
    const model = new ConstantTrainerModel(0);
    const out = await trainStep(model, {
      step: 2,
      rollouts: [
        rollout(prompt, [gen(-1), gen(-1 - Math.log(3))]),
        rollout(prompt, [gen(-1 + Math.log(4)), gen(-1 - Math.log(1.8))]),
      ],
      advantages: [0.5, -0.5],
      is: { ...is, truncate: true, clipMax: 1.5, mask: true },
      reduction: 'sum',
      adam,
    });
    expect(out.maskedFraction).toBe(2 / 4);
    expect(out.truncatedFraction).toBe(1 / 4);
    const P = prompt.length;
    const [a, b] = sentAdvantages(model);
    // A_t·w_t/r_t: 0.5/(2·2) on the kept r = 1, 0 where masked, −0.5/4 · 1.5/1.8 on the clipped
    expect([a![P - 1], a![P], b![P - 1]]).toEqual([0.125, 0, 0]);
    expect(b![P]).toBeCloseTo((-0.125 * 1.5) / 1.8, 7);
    // J_w = 1/2 · (0.5 · (1 + 0)/2 − 0.5 · (0 + 1.5)/2)
    expect(out.loss).toBeCloseTo(-(0.5 * 0.5 - 0.5 * 0.75) / 2, 7);
  });

  // One token the trainer scores 89 nats below the sampler (logp_train −90 vs logp_infer −1) in
  // a rollout of 1000: s_i = e^{−0.089}, and its factor s_i / r_t = e^{88.911} ≈ 4.1e38 is past
  // float32's 3.4e38. Formed from its log with the advantage, A_t·w_t/r_t fits.
  const farBelow = () =>
    rollout(prompt, [
      { tokens: Array.from({ length: 999 }, () => 97), generated: true, logprob: -90 },
      { tokens: [98], generated: true, logprob: -1 },
    ]);
  const sequenceIs = { ...is, level: 'sequence' as const };

  it('sequence level: a zero-advantage group sends exact zeros, not NaN', async () => {
    const model = new ConstantTrainerModel(0, -90);
    const out = await trainStep(model, {
      step: 3,
      rollouts: [farBelow(), farBelow()],
      advantages: [0, 0],
      is: sequenceIs,
      reduction: 'sum',
      adam,
    });
    for (const datum of sentAdvantages(model)) expect(datum.every((a) => a === 0)).toBe(true);
    expect(out.loss === 0).toBe(true); // −J_w = −0 (a NaN would fail)
    expect(model.optimSteps).toBe(1);
  });

  it('sequence level: the far-below token gets its finite A_t·s_i/r_t', async () => {
    const model = new ConstantTrainerModel(0, -90);
    const out = await trainStep(model, {
      step: 3,
      rollouts: [farBelow(), farBelow()],
      advantages: [1, -1],
      is: sequenceIs,
      reduction: 'sum',
      adam,
    });
    const last = prompt.length + 999 - 1; // datum position of the far-below token
    const expected = (1 / (2 * 1000)) * Math.exp(-89 / 1000 + 89); // ≈ 2.07e35
    const [a, b] = sentAdvantages(model);
    expect(Number.isFinite(a![last])).toBe(true);
    expect(a![last]! / expected).toBeCloseTo(1, 6);
    expect(b![last]! / -expected).toBeCloseTo(1, 6);
    // the other tokens: factor s_i / r_t = e^{−0.089} (r_t = 1)
    expect(a![last - 1]! / ((1 / 2000) * Math.exp(-0.089))).toBeCloseTo(1, 6);
    expect(out.loss).toBeCloseTo(0, 12); // J_w = (s − s)/2
  });

  it('refuses an advantage float32 cannot hold, naming the step and datum', async () => {
    // 120 nats below: A_t·s_i/r_t ≈ e^{112} overflows float32 whatever the advantage
    const model = new ConstantTrainerModel(0, -121);
    const far = () =>
      rollout(prompt, [
        { tokens: Array.from({ length: 999 }, () => 97), generated: true, logprob: -121 },
        { tokens: [98], generated: true, logprob: -1 },
      ]);
    await expect(
      trainStep(model, {
        step: 5,
        rollouts: [far(), far()],
        advantages: [1, -1],
        is: sequenceIs,
        reduction: 'sum',
        adam,
      }),
    ).rejects.toThrow(
      `step 5: datum 0: advantages[${prompt.length + 998}] is Infinity (generated token ${prompt.length + 999} of rollout 0)`,
    );
    expect(model.calls.some((c) => c.kind === 'forwardBackward')).toBe(false);
    expect(model.optimSteps).toBe(0);
  });
});

describe('trainStep refuses non-finite numbers', () => {
  it('a NaN sampler logprob, before any trainer call', async () => {
    const model = new ConstantTrainerModel(0);
    const bad = [rollout(prompt, [gen(-1)]), rollout(prompt, [gen(-1), gen(NaN)])];
    await expect(
      trainStep(model, {
        step: 4,
        rollouts: bad,
        advantages: [0.5, -0.5],
        is,
        reduction: 'sum',
        adam,
      }),
    ).rejects.toThrow(`step 4: datum 1: logprobs[${prompt.length}] is NaN`);
    expect(model.calls).toEqual([]);
  });

  it('NaN trainer logprobs, before the optimiser step', async () => {
    const model = new ConstantTrainerModel(0, NaN);
    await expect(
      trainStep(model, {
        step: 6,
        rollouts: rollouts(),
        advantages: [0.5, -0.5],
        is,
        reduction: 'sum',
        adam,
      }),
    ).rejects.toThrow(`step 6: datum 0: trainer logprobs[${prompt.length - 1}] is NaN`);
    expect(model.optimSteps).toBe(0);
  });
});
