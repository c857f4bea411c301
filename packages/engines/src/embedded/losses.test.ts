// Hand-computed values (and signs) of every loss the embedded trainer implements. The finite-
// difference checks in model.test.ts compare the backward pass with the loss the code computes,
// so they cannot tell −r·A from +r·A; these tests pin the loss itself to docs/engines.md "Losses".
import { describe, expect, it } from 'vitest';
import type { Datum, LossFn } from '../types.ts';
import { runBatch } from './compute.ts';
import type { CheckedDatum } from './losses.ts';
import { checkDatum, checkLossConfig, symmetricBradleyTerry, tokenLoss } from './losses.ts';
import { Transformer } from './model.ts';
import type { ModelConfig } from './params.ts';
import { paramLayout } from './params.ts';
import { createRng, normal } from './rng.ts';

const ln = Math.log;

/** A checked datum with only what tokenLoss reads. */
function datum(fields: Partial<CheckedDatum>): CheckedDatum {
  return {
    tokens: new Int32Array(0),
    targets: null,
    weights: null,
    samplingLogprobs: null,
    advantages: null,
    label: null,
    ...fields,
  };
}

// Four tokens with IS ratios r = π/μ of 1.25, 0.5, 1.5, 0.5 and advantages 2, 2, −1, −1.
const logp = Float64Array.of(ln(0.5), ln(0.2), ln(0.6), ln(0.2));
const rl = datum({
  samplingLogprobs: Float32Array.of(ln(0.4), ln(0.4), ln(0.4), ln(0.4)),
  advantages: Float32Array.of(2, 2, -1, -1),
});

describe('token losses: hand-computed values', () => {
  it('importance_sampling: loss −r·A per token, dLoss/dlogπ = −r·A', () => {
    const out = tokenLoss('importance_sampling', rl, logp);
    // −1.25·2, −0.5·2, −1.5·(−1), −0.5·(−1)
    const expected = [-2.5, -1, 1.5, 0.5];
    expected.forEach((v, t) => expect(out.elementwise[t]).toBeCloseTo(v, 6));
    expected.forEach((v, t) => expect(out.dLogp[t]).toBeCloseTo(v, 6));
    expect(out.lossSum).toBeCloseTo(-1.5, 6);
  });

  it('importance_sampling: a positive advantage lowers the loss as π_train rises', () => {
    const one = datum({
      samplingLogprobs: Float32Array.of(ln(0.4)),
      advantages: Float32Array.of(1),
    });
    const low = tokenLoss('importance_sampling', one, Float64Array.of(ln(0.4))).lossSum;
    const high = tokenLoss('importance_sampling', one, Float64Array.of(ln(0.8))).lossSum;
    expect(low).toBeCloseTo(-1, 6);
    expect(high).toBeCloseTo(-2, 6);
  });

  it('ppo: −min(r·A, clip(r, 0.8, 1.2)·A); the clipped branch has no gradient', () => {
    const out = tokenLoss('ppo', rl, logp);
    // token 0: min(2.5, 2.4) = 2.4 clipped; 1: min(1, 1.6) = 1; 2: min(−1.5, −1.2) = −1.5;
    // 3: min(−0.5, −0.8) = −0.8 clipped
    [-2.4, -1, 1.5, 0.8].forEach((v, t) => expect(out.elementwise[t]).toBeCloseTo(v, 6));
    [0, -1, 1.5, 0].forEach((v, t) => expect(out.dLogp[t]).toBeCloseTo(v, 6));
    expect(out.lossSum).toBeCloseTo(-1.1, 6);
  });

  it('ppo honours clip thresholds from the config', () => {
    const out = tokenLoss('ppo', rl, logp, { clipLowThreshold: 0.9, clipHighThreshold: 1.1 });
    expect(out.elementwise[0]).toBeCloseTo(-2.2, 6); // −1.1·2
    expect(out.elementwise[3]).toBeCloseTo(0.9, 6); // −min(−0.5, −0.9)
  });

  it('cross_entropy: −w·logπ, dLoss/dlogπ = −w', () => {
    const ce = datum({ weights: Float32Array.of(0, 1, 0.5) });
    const out = tokenLoss('cross_entropy', ce, Float64Array.of(ln(0.5), ln(0.2), ln(0.9)));
    [0, 1.6094379, 0.0526803].forEach((v, t) => expect(out.elementwise[t]).toBeCloseTo(v, 6));
    [0, -1, -0.5].forEach((v, t) => expect(out.dLogp[t]).toBeCloseTo(v, 6));
  });
});

describe('symmetric Bradley–Terry: hand-computed values', () => {
  it('r = 1, s_a − s_b = 2: L = log(1 + e^−2), dL/ds_a = σ(2) − 1', () => {
    const pair = symmetricBradleyTerry(1, -1, 1);
    expect(pair.loss).toBeCloseTo(0.126928, 6);
    expect(pair.dScoreA).toBeCloseTo(-0.119203, 6);
    expect(pair.dScoreB).toBeCloseTo(0.119203, 6);
    expect(pair.correct).toBe(1);
  });

  it('r = 0.25, Δ = 0.5: L = −(¼ log σ(½) + ¾ log σ(−½)), dL/ds_a = σ(½) − ¼', () => {
    const pair = symmetricBradleyTerry(0.5, 0, 0.25);
    expect(pair.loss).toBeCloseTo(0.25 * 0.474077 + 0.75 * 0.974077, 5);
    expect(pair.dScoreA).toBeCloseTo(0.622459 - 0.25, 6);
    expect(pair.dScoreB).toBeCloseTo(-(0.622459 - 0.25), 6);
    expect(pair.correct).toBe(0); // ranks a above b although b is preferred
  });
});

// A tiny random LM in float64 (see model.test.ts) for the temperature tests.
const config: ModelConfig = {
  vocabSize: 7,
  blockSize: 6,
  nLayer: 1,
  nHead: 1,
  nEmbd: 4,
  head: 'lm',
};
function model(seed: number): Transformer {
  const layout = paramLayout(config);
  const rng = createRng(seed);
  const params = new Float64Array(layout.size);
  for (let i = 0; i < params.length; i++) params[i] = 0.5 * normal(rng);
  return new Transformer(config, params);
}

function isDatum(tokens: number[], targets: number[], mu: number[], adv: number[]): Datum {
  return {
    modelInput: tokens,
    lossFnInputs: {
      target_tokens: Int32Array.from(targets),
      logprobs: Float32Array.from(mu),
      advantages: Float32Array.from(adv),
    },
  };
}

describe('scoring at the sampler temperature', () => {
  const tokens = [1, 3, 0, 5];
  const targets = [3, 0, 5, 2];

  it('logprobs are log-softmax(logits / τ) of the target, computed by hand from the logits', () => {
    const m = model(11);
    const tau = 0.6;
    const logits = m.forward(tokens).logits!; // the logits do not depend on τ
    const V = config.vocabSize;
    const expected = targets.map((target, t) => {
      const row = Array.from(logits.subarray(t * V, (t + 1) * V), (z) => z / tau);
      const max = Math.max(...row);
      const lse = max + ln(row.reduce((s, z) => s + Math.exp(z - max), 0));
      return row[target]! - lse;
    });
    const d = isDatum(tokens, targets, [0, 0, 0, 0], [1, 1, 1, 1]);
    const out = runBatch(
      m,
      [checkDatum(d, 0, 'importance_sampling')],
      'importance_sampling',
      { temperature: tau },
      null,
    );
    expected.forEach((v, t) => expect(out.outputs[0]!.logprobs[t]).toBeCloseTo(v, 5));
    const atOne = runBatch(
      m,
      [checkDatum(d, 0, 'importance_sampling')],
      'importance_sampling',
      {},
      null,
    );
    expect(Math.abs(atOne.outputs[0]!.logprobs[0]! - expected[0]!)).toBeGreaterThan(1e-3);
  });

  it('importance_sampling at τ: loss −exp(logp_τ − μ)·A and a backward that matches finite differences', () => {
    const m = model(12);
    const mu = [-1.2, -2.0, -0.7, -1.6];
    const adv = [0.8, -0.4, 1.1, -1.3];
    const checked = [checkDatum(isDatum(tokens, targets, mu, adv), 0, 'importance_sampling')];
    const cfg = { temperature: 0.6 };
    const grads = new Float64Array(m.params.length);
    const out = runBatch(m, checked, 'importance_sampling', cfg, grads);
    const lp = out.outputs[0]!.logprobs;
    const byHand = adv.reduce((s, a, t) => s - Math.exp(lp[t]! - Math.fround(mu[t]!)) * a, 0);
    expect(out.lossSum).toBeCloseTo(byHand, 5);
    const eps = 1e-5;
    let worst = 0;
    for (let i = 0; i < m.params.length; i++) {
      const saved = m.params[i]!;
      m.params[i] = saved + eps;
      const up = runBatch(m, checked, 'importance_sampling', cfg, null).lossSum;
      m.params[i] = saved - eps;
      const down = runBatch(m, checked, 'importance_sampling', cfg, null).lossSum;
      m.params[i] = saved;
      const numeric = (up - down) / (2 * eps);
      const err =
        Math.abs(numeric - grads[i]!) / Math.max(1e-3, Math.abs(numeric) + Math.abs(grads[i]!));
      worst = Math.max(worst, err);
    }
    expect(worst).toBeLessThan(1e-6);
  });

  it('rejects a temperature that is not a finite number > 0, and one on bradley_terry', () => {
    const lossFns: LossFn[] = ['importance_sampling', 'ppo', 'cross_entropy'];
    for (const lossFn of lossFns) {
      expect(() => checkLossConfig(lossFn, { temperature: 0 })).toThrow(
        /loss_fn_config.temperature/,
      );
      expect(() => checkLossConfig(lossFn, { temperature: Number.NaN })).toThrow(/temperature/);
      expect(() => checkLossConfig(lossFn, { temperature: 0.6 })).not.toThrow();
    }
    expect(() => checkLossConfig('bradley_terry', { temperature: 0.5 })).toThrow(/bradley_terry/);
  });
});
