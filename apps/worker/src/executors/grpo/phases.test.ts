// Hand-checked numbers through the GRPO phases: rewards (docs/recipe.md §4) -> advantages (§2) ->
// per-token advantages for a 'sum' trainer -> the trainer call and its KL / IS statistics.
import { validateRunSpec, type GrpoSpec } from '@anneal/protocol';
import { isWeights } from '@anneal/rl';
import { describe, expect, it } from 'vitest';
import { ShiftedTrainerModel, format, rollout } from '../../../test/executors/fakes.ts';
import {
  backendTokenAdvantages,
  flatAdvantages,
  generatedLayout,
  generatedPosition,
} from './advantages.ts';
import { rewardConfig, scoreGroups } from './rewards.ts';
import { isData, trainStep } from './train-step.ts';

function grpoSpec(extra: Record<string, unknown> = {}): GrpoSpec {
  const parsed = validateRunSpec({ kind: 'grpo', ...extra });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value as GrpoSpec;
}

const prompt = format.encodePrompt('q?');
const gen = (n: number) => ({
  tokens: Array.from({ length: n }, (_, k) => 97 + k),
  generated: true,
});
const tool = (n: number) => ({ tokens: Array.from({ length: n }, () => 120), generated: false });

/** 2 winners, 2 losers; r1 has a tool call whose 3 output tokens sit between its generations. */
function group() {
  return [
    rollout(prompt, [gen(2)], { toolCalls: 1 }),
    rollout(prompt, [gen(1), tool(3), gen(3)], { toolCalls: 1 }),
    rollout(prompt, [gen(1)], { toolCalls: 3, toolErrors: 1 }),
    rollout(prompt, [gen(3)]),
  ];
}
const references = Array.from({ length: 4 }, () => rollout(prompt, [gen(3)]));
const baseReward = [1, 1, 0, 0];
const preferenceScore = [1, 1, 1, 1];

describe('generatedLayout', () => {
  it('lays out every run of generated tokens in order: runs, positions, offsets, sampler logprobs', () => {
    const p = prompt.length;
    const rollouts = [
      rollout(prompt, [
        { tokens: [1, 2], generated: true, logprob: -0.5 },
        tool(3),
        { tokens: [3], generated: true, logprob: -0.25 },
        tool(1),
        { tokens: [4, 5, 6], generated: true, logprob: -2 },
      ]),
      rollout(prompt, [tool(2)]), // no generated token
      rollout(prompt, [{ tokens: [7], generated: true, logprob: -1.5 }]),
    ];
    const layout = generatedLayout(rollouts);
    expect([...layout.offsets]).toEqual([0, 6, 6, 7]);
    expect(layout.runs.map((runs) => [...runs])).toEqual([
      [p, p + 2, p + 5, p + 6, p + 7, p + 10],
      [],
      [p, p + 1],
    ]);
    const positions = layout.runs.map((runs, i) =>
      Array.from({ length: layout.offsets[i + 1]! - layout.offsets[i]! }, (_, k) =>
        generatedPosition(runs, k),
      ),
    );
    expect(positions).toEqual([[p, p + 1, p + 5, p + 7, p + 8, p + 9], [], [p]]);
    expect(() => generatedPosition(layout.runs[0]!, 6)).toThrow(/generated token 6/);
    expect([...layout.logpInfer]).toEqual([-0.5, -0.5, -0.25, -2, -2, -2, -1.5]);
  });

  it('refuses a rollout whose first token is marked generated', () => {
    const bad = rollout([], [{ tokens: [1, 2], generated: true }]);
    expect(() => generatedLayout([bad])).toThrow(/first token of a rollout cannot be generated/);
  });
});

describe('isData', () => {
  it("writes each datum's advantages and weights into the layout's scratch, zeroed again each call", () => {
    const rollouts = group();
    const layout = generatedLayout(rollouts);
    const lengths = rollouts.map((r) => r.tokens.length);
    expect(layout.scratch.length).toBe(2 * lengths.reduce((a, b) => a + b, 0));
    layout.scratch.fill(7); // what an earlier step left there
    layout.tokenAdvantages.fill(0.25);
    const first = isData(rollouts, layout, layout.tokenAdvantages);
    first.forEach((d, i) => {
      const mask = [...rollouts[i]!.lossMask.slice(1)];
      expect([...d.lossFnInputs['weights']!], `datum ${i}`).toEqual(mask);
      expect([...d.lossFnInputs['advantages']!], `datum ${i}`).toEqual(mask.map((m) => m / 4));
      // views of the scratch, one after another: no datum's arrays overlap another's
      expect(d.lossFnInputs['weights']!.buffer).toBe(layout.scratch.buffer);
    });
    const starts = first.flatMap((d) =>
      ['advantages', 'weights'].map((k) => (d.lossFnInputs[k] as Float32Array).byteOffset),
    );
    expect(new Set(starts).size).toBe(starts.length);
    // a second call (forward_backward after the IS probe) overwrites the first's datums
    layout.tokenAdvantages.fill(-0.5);
    const second = isData(rollouts, layout, layout.tokenAdvantages);
    expect(first[1]!.lossFnInputs['advantages']).toEqual(second[1]!.lossFnInputs['advantages']);
    expect(Math.min(...second[1]!.lossFnInputs['advantages']!)).toBe(-0.5);
    // a layout made for fewer tokens has no room for them
    expect(() =>
      isData(rollouts, generatedLayout(rollouts.slice(0, 1)), layout.tokenAdvantages),
    ).toThrow(/isData: \d+ floats of datums, the layout's scratch holds \d+/);
  });
});

describe('rewards -> advantages -> per-token advantages', () => {
  it('2 winners / 2 losers without shaping: Â = ±0.5, A_t = Â/(N·|o_i|) for a sum trainer', () => {
    const config = { ...rewardConfig(grpoSpec()), lambdaTool: 0, lambdaLen: 0 };
    const scores = scoreGroups(
      [{ rollouts: group(), references, baseReward, preferenceScore }],
      config,
      0,
      1,
    );
    expect([...scores[0]!.reward]).toEqual([1, 1, 0, 0]);
    const advantages = flatAdvantages(scores);
    expect([...advantages]).toEqual([0.5, 0.5, -0.5, -0.5]);
    const layout = generatedLayout(group());
    expect([...layout.offsets]).toEqual([0, 2, 6, 7, 10]);
    const tokenAdvantages = backendTokenAdvantages(advantages, layout, 'sum', null);
    const expected = [
      0.5 / 8,
      0.5 / 8,
      0.5 / 16,
      0.5 / 16,
      0.5 / 16,
      0.5 / 16,
      -0.5 / 4,
      -0.5 / 12,
      -0.5 / 12,
      -0.5 / 12,
    ];
    tokenAdvantages.forEach((a, t) => expect(a).toBeCloseTo(expected[t]!, 7));
    const perSequence = backendTokenAdvantages(advantages, layout, 'mean_per_sequence', null);
    expect(perSequence[0]).toBeCloseTo(0.5, 7); // Â_i: SkyRL JAX divides by |o_i| and N itself
  });

  it('anchored tool and length penalties with the spec defaults, by hand', () => {
    const scores = scoreGroups(
      [{ rollouts: group(), references, baseReward, preferenceScore }],
      rewardConfig(grpoSpec()),
      0,
      1,
    );
    const s = scores[0]!;
    // winners' effective calls are [1, 1] -> b_g ∈ {1..1}
    expect(s.toolBaseline).toBe(1);
    const p = 1 - Math.exp(-1); // loser r2: c̃ = 3 − 1 = 2, Δ = 1
    expect([...s.toolPenalty]).toEqual([0, 0, expect.closeTo(p + 0.1, 9), 0.1]);
    // L = [2, 4, 1, 3], L_ref = 3 each: r1 over the hard cap; r2 a terse loser (3/1 − 1 = 2)
    expect([...s.lengthPenalty]).toEqual([0, 1, expect.closeTo(1 - Math.exp(-2), 9), 0]);
    const rewards = [1, 0.9, -(0.1 * (p + 0.1) + 0.1 * (1 - Math.exp(-2))), -0.01];
    const mean = rewards.reduce((a, b) => a + b) / 4;
    [...s.reward].forEach((r, i) => expect(r).toBeCloseTo(rewards[i]!, 9));
    [...s.advantage].forEach((a, i) => expect(a).toBeCloseTo(rewards[i]! - mean, 9));
    expect(s.zeroVariance).toBe(false);
  });

  it('a tied group has zero advantage and is counted', () => {
    const config = { ...rewardConfig(grpoSpec()), lambdaTool: 0, lambdaLen: 0 };
    const [s] = scoreGroups(
      [{ rollouts: group(), references, baseReward: [0, 0, 0, 0], preferenceScore }],
      config,
      0,
      1,
    );
    expect(s!.zeroVariance).toBe(true);
    expect([...s!.advantage]).toEqual([0, 0, 0, 0]);
  });
});

describe('trainStep', () => {
  const advantages = [0.5, 0.5, -0.5, -0.5];
  const adam = {
    learningRate: 1e-3,
    beta1: 0.9,
    beta2: 0.95,
    eps: 1e-8,
    weightDecay: 0,
    gradClipNorm: 1,
  };
  const is = grpoSpec().importanceSampling;

  it('sends sampling logprobs + scaled advantages on generated positions only', async () => {
    const model = new ShiftedTrainerModel(0.01);
    const out = await trainStep(model, {
      step: 1,
      rollouts: group(),
      advantages,
      is,
      reduction: 'sum',
      adam,
    });
    expect(model.calls.map((c) => `${c.kind}:${c.lossFn}`)).toEqual([
      'forwardBackward:importance_sampling',
    ]);
    const datum = model.calls[0]!.data[1]!; // r1: prompt, 1 generated, 3 tool, 3 generated
    const P = prompt.length;
    const A = [...datum.lossFnInputs['advantages']!];
    const L = [...datum.lossFnInputs['logprobs']!];
    // datum position t−1 describes token t
    const generatedAt = [P, P + 4, P + 5, P + 6].map((t) => t - 1);
    A.forEach((a, k) => expect(a).toBeCloseTo(generatedAt.includes(k) ? 0.5 / 16 : 0, 8));
    L.forEach((l, k) => expect(l).toBe(generatedAt.includes(k) ? -1 : 0));
    // weights = the loss mask on every datum (SkyRL counts an absent weight as 1 everywhere)
    for (const [i, d] of model.calls[0]!.data.entries()) {
      expect([...d.lossFnInputs['weights']!], `datum ${i}`).toEqual([
        ...group()[i]!.lossMask.slice(1),
      ]);
    }
    expect([...datum.lossFnInputs['weights']!].filter((w) => w === 1)).toHaveLength(4);
    expect([...datum.lossFnInputs['target_tokens']!]).toEqual([...group()[1]!.tokens.slice(1)]);
    expect(model.optimSteps).toBe(1);
    // d = logp_infer − logp_train = −0.01 on all 10 generated tokens
    expect(out.tokens).toBe(10);
    expect(out.k1).toBeCloseTo(-0.01, 6);
    expect(out.k3).toBeCloseTo(Math.exp(0.01) - 1 - 0.01, 6);
    expect(out.ratioMean).toBeCloseTo(Math.exp(0.01), 6);
    expect(out.ratioFractionOutside).toBe(0);
    expect(out.objective).toBeCloseTo(0, 6); // Σ Â = 0 and every ratio is equal
    expect(out.gradNorm).toBe(1.5);
    expect(out.maskedFraction).toBeNull();
  });

  it('reports a missing grad norm as null', async () => {
    const model = new ShiftedTrainerModel(0, null);
    const out = await trainStep(model, {
      step: 1,
      rollouts: group(),
      advantages,
      is,
      reduction: 'sum',
      adam,
    });
    expect(out.gradNorm).toBeNull();
  });

  it('truncated IS: probes the ratios, then weights each token by min(r, c)/r', async () => {
    const model = new ShiftedTrainerModel(0.01);
    const clipMax = 1.005; // below r = e^0.01 ≈ 1.01005: every token is clipped
    await trainStep(model, {
      step: 1,
      rollouts: group(),
      advantages,
      is: { ...is, truncate: true, clipMax },
      reduction: 'sum',
      adam,
    });
    expect(model.calls.map((c) => c.kind)).toEqual(['forward', 'forwardBackward']);
    const A = model.calls[1]!.data[0]!.lossFnInputs['advantages']!;
    const r = Math.exp(0.01);
    // the backend's gradient weight r·A_t equals the TIS weight min(r, c)·Â/(N|o|)
    expect(r * A[prompt.length - 1]!).toBeCloseTo((clipMax * 0.5) / 8, 7);
  });

  it('masked IS drops every token outside [low, high]; sequence level keeps the GSPO weight', async () => {
    const masked = new ShiftedTrainerModel(0.01);
    const out = await trainStep(masked, {
      step: 1,
      rollouts: group(),
      advantages,
      is: { ...is, mask: true, maskHigh: 1.005 },
      reduction: 'sum',
      adam,
    });
    expect(out.maskedFraction).toBe(1);
    expect([...masked.calls[1]!.data[0]!.lossFnInputs['advantages']!].every((a) => a === 0)).toBe(
      true,
    );
    const layout = generatedLayout(group());
    const logpTrain = layout.logpInfer.map((l) => l + 0.01);
    const seq = isWeights(
      { ...is, level: 'sequence' },
      logpTrain,
      layout.logpInfer,
      layout.offsets,
    );
    // s_i = r when every r_t is equal: the factor w_t/r_t is 1
    seq.logFactors.forEach((f) => expect(Math.exp(f)).toBeCloseTo(1, 6));
  });
});
