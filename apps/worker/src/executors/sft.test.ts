import { TinkerTrainerEngine, type LossReduction } from '@anneal/engines';
import { FakeTinkerServer } from '@anneal/engines/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { meanCrossEntropy, sftBatch, sftObjectiveNotice } from './sft.ts';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
});

describe('sftBatch (docs/recipe.md §1: loss on completion tokens only)', () => {
  const examples = [
    // prompt [1, 2], completion [3, 4], tool output [5], completion [6]
    { id: 'a', tokens: [1, 2, 3, 4, 5, 6], lossMask: [0, 0, 1, 1, 0, 1] },
    { id: 'b', tokens: [1, 7, 8], lossMask: [0, 1, 1] },
  ];

  it('weights completion targets 1/total for a summing trainer, 0 elsewhere', () => {
    const batch = sftBatch(examples, 100, 'sum');
    expect(batch.trainedTokens).toBe(5);
    expect([...batch.data[0]!.modelInput]).toEqual([1, 2, 3, 4, 5]);
    expect([...batch.data[0]!.lossFnInputs['target_tokens']!]).toEqual([2, 3, 4, 5, 6]);
    expect([...batch.data[0]!.lossFnInputs['weights']!]).toEqual(
      [0, 0.2, 0.2, 0, 0.2].map(Math.fround),
    );
    expect([...batch.data[1]!.lossFnInputs['weights']!]).toEqual([0.2, 0.2].map(Math.fround));
    expect(batch.inputTokens).toBe(7);
  });

  it('sends the bare loss mask to a mean-per-sequence trainer and cuts long sequences', () => {
    // SkyRL JAX divides each datum by the sum of its weights: a per-datum scale would cancel
    const batch = sftBatch(examples, 4, 'mean_per_sequence');
    expect([...batch.data[0]!.lossFnInputs['weights']!]).toEqual([0, 1, 1]);
    expect([...batch.data[1]!.lossFnInputs['weights']!]).toEqual([1, 1]);
  });

  it('says what a mean-per-sequence trainer optimises; nothing for a summing one', () => {
    expect(sftObjectiveNotice('sum')).toBeUndefined();
    expect(sftObjectiveNotice('mean_per_sequence', "trainer endpoint 'skyrl'")).toMatch(
      /^trainer endpoint 'skyrl' reduces token losses per sequence .* mean over sequences of each sequence’s mean completion-token cross-entropy/,
    );
  });

  it('mean cross-entropy covers masked-in targets only', () => {
    const masks = [Float32Array.of(0, 1, 1), Float32Array.of(1)];
    const logprobs = [Float32Array.of(-9, -1, -2), Float32Array.of(-3)];
    expect(meanCrossEntropy(logprobs, masks)).toBeCloseTo(2, 6);
  });

  it.each([
    // Σ_i Σ_t w·(−logp) with w = 1/5: every completion token weighs 1/5
    { options: { flavor: 'tinker' as const }, reduction: 'sum' as const, perToken: [0.2, 0.2] },
    // 1/2 Σ_i (Σ_t −logp)/n_i: sequence a has 3 completion tokens, b has 2
    {
      options: { flavor: 'skyrl' as const },
      reduction: 'mean_per_sequence' as const,
      perToken: [1 / 6, 1 / 4],
    },
  ])('on the $options.flavor arithmetic each completion token weighs $perToken', async (c) => {
    const fake = await FakeTinkerServer.start({ ...c.options, pendingPolls: 0 });
    open.push(fake);
    const reduction: LossReduction = c.reduction;
    const engine = await TinkerTrainerEngine.connect({
      name: 'trainer',
      baseUrl: fake.url,
      capabilities: { kinds: ['sft'], losses: ['cross_entropy'], reduction },
    });
    open.push(engine);
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    const batch = sftBatch(examples, 100, reduction);
    await model.forwardBackward(batch.data, 'cross_entropy');
    await model.optimStep({
      learningRate: 1e-4,
      beta1: 0.9,
      beta2: 0.95,
      eps: 1e-12,
      weightDecay: 0,
      gradClipNorm: 0,
    });
    const [step] = fake.appliedGradients(model.id);
    step!.dLogp.forEach((datum, i) =>
      datum.forEach((g, t) => expect(-g).toBeCloseTo(batch.masks[i]![t]! * c.perToken[i]!, 7)),
    );
  });
});
