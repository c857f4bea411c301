// The fake trainer's backend arithmetic and adapter-slot semantics, driven through the real
// client, pinned to hand-computed values of the upstream formulas (docs/engines.md
// "Conformance"; SkyRL a9564572e: skyrl/tinker/api.py Datum.to_types, skyrl/tinker/loss_fns.py,
// skyrl/backends/jax.py loss_for_lora + AccumulatedGradients, skyrl/backends/skyrl_train/utils/
// ppo_utils.py importance_sampling_loss, skyrl/backends/jax.py load_sampler_weights,
// skyrl/backends/skyrl_train_backend.py _sample_with_remote_client).
import { afterEach, describe, expect, it } from 'vitest';
import { adam, startTinker } from '../../test/tinker-harness.ts';
import { processBytePool } from '../http/byte-pool.ts';
import type { Datum } from '../types.ts';
import { TinkerSamplingEngine } from './sampling.ts';
import type { FakeTinkerOptions } from '../../test/tinker/fake-server.ts';
import { fakeLogprob } from '../../test/tinker/losses.ts';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
});

/** A 4-position datum: prompt targets [1, 2] are masked, generated targets [3, 4] trained. */
function isDatum(weights: number[] | null, advantage: number): Datum {
  return {
    modelInput: [9, 1, 2, 3],
    lossFnInputs: {
      target_tokens: Int32Array.from([1, 2, 3, 4]),
      logprobs: Float32Array.from([0, 0, -0.5, -0.5]),
      advantages: Float32Array.from([0, 0, advantage, advantage]),
      ...(weights && { weights: Float32Array.from(weights) }),
    },
  };
}

/** −r_t·A_t per target: ∂(−r·A)/∂logπ for the fake's logπ at 0 steps. */
const isGrad = (d: Datum) =>
  [0, 1, 2, 3].map((t) => {
    const inputs = d.lossFnInputs;
    const r = Math.exp(fakeLogprob(inputs['target_tokens']![t]!, 0) - inputs['logprobs']![t]!);
    return -r * inputs['advantages']![t]!;
  });

async function trainOnce(server: FakeTinkerOptions, data: Datum[], maxDatumsPerRequest?: number) {
  const { fake, engine } = await startTinker(
    open,
    { pendingPolls: 0, ...server },
    maxDatumsPerRequest === undefined ? {} : { maxDatumsPerRequest },
  );
  const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
  await model.forwardBackward(data, 'importance_sampling');
  await model.optimStep(adam);
  const applied = fake.appliedGradients(model.id);
  expect(applied).toHaveLength(1);
  return applied[0]!.dLogp;
}

describe('loss reduction over the weights received', () => {
  const masked = [isDatum([0, 0, 1, 1], 1), isDatum([0, 0, 1, 1], -2)];

  it('skyrl-jax: each datum over the sum of its weights, then the mean over datums', async () => {
    const dLogp = await trainOnce({ flavor: 'skyrl' }, masked);
    masked.forEach((d, i) => {
      const expected = isGrad(d).map((g, t) => ([0, 0, 1, 1][t]! * g) / 2 / 2);
      dLogp[i]!.forEach((g, t) => expect(g).toBeCloseTo(expected[t]!, 12));
    });
  });

  it('skyrl-jax without weights: every target position weighs 1, the prompt counts', async () => {
    const unweighted = [isDatum(null, 1)];
    const [dLogp] = await trainOnce({ flavor: 'skyrl' }, unweighted);
    // Σ w = 4 positions (2 prompt + 2 generated), not the 2 generated tokens.
    isGrad(unweighted[0]!).forEach((g, t) => expect(dLogp![t]).toBeCloseTo(g / 4, 12));
  });

  it('skyrl-jax: the datum count spans every forward_backward call before optim_step', async () => {
    const data = [isDatum([0, 0, 1, 1], 1), isDatum([0, 0, 1, 1], 1), isDatum([0, 0, 1, 1], 1)];
    const dLogp = await trainOnce({ flavor: 'skyrl' }, data, 2); // sent as 2 + 1 datums
    isGrad(data[0]!).forEach((g, t) =>
      expect(dLogp[2]![t]).toBeCloseTo(([0, 0, 1, 1][t]! * g) / 2 / 3, 12),
    );
  });

  it.each([
    ['skyrl-fsdp', { flavor: 'skyrl', skyrlBackend: 'fsdp' } as const],
    ['tinker', { flavor: 'tinker' } as const],
  ])('%s: the weighted token losses summed, nothing divided', async (_name, server) => {
    const dLogp = await trainOnce(server, masked);
    masked.forEach((d, i) => {
      isGrad(d).forEach((g, t) => expect(dLogp[i]![t]).toBeCloseTo(g, 12));
    });
  });
});

describe('float32 loss inputs as the trainer holds them', () => {
  it('the client sends float32 text, the fake trains on the float32 (SkyRL: np/torch float32)', async () => {
    // 1/3 and −0.1 as float32 go out as 0.33333334 and -0.1: as doubles these are not the
    // float32 values; the trainer rounds them to float32, and so must the fake
    const datum: Datum = {
      modelInput: [9, 1],
      lossFnInputs: {
        target_tokens: Int32Array.from([1, 2]),
        logprobs: Float32Array.from([-0.1, -1 / 3]),
        advantages: Float32Array.from([1 / 3, -0.1]),
        weights: Float32Array.from([1, 1]),
      },
    };
    const { fake, engine } = await startTinker(open, {
      flavor: 'skyrl',
      skyrlBackend: 'fsdp',
      pendingPolls: 0,
    });
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    await model.forwardBackward([datum], 'importance_sampling');
    const sent = fake.requestsTo('forward_backward')[0] as {
      forward_backward_input: {
        data: Array<{ loss_fn_inputs: Record<string, { data: number[] }> }>;
      };
    };
    expect(sent.forward_backward_input.data[0]!.loss_fn_inputs['advantages']!.data).toEqual([
      0.33333334, -0.1,
    ]);
    await model.optimStep(adam);
    const [applied] = fake.appliedGradients(model.id);
    const held = applied!.data[0]!.loss_fn_inputs;
    expect(held['logprobs']!.data).toEqual(Array.from(datum.lossFnInputs['logprobs']!));
    expect(held['advantages']!.data).toEqual(Array.from(datum.lossFnInputs['advantages']!));
    // the summing backend's gradient −r·A, bit for bit from the float32 inputs
    const [lp, adv] = [held['logprobs']!.data, held['advantages']!.data];
    const expected = [0, 1].map((t) => -Math.exp(fakeLogprob(t + 1, 0) - lp[t]!) * adv[t]!);
    expect(applied!.dLogp[0]).toEqual(expected);
  });
});

describe('request bodies written into reused buffers', () => {
  it('sends every chunk as written, one pooled buffer given back after each 2xx reply', async () => {
    // 6 datums of 4,096 positions in chunks of 2: each body ~250 kB, so from the process pool
    const length = 4096;
    const data: Datum[] = Array.from({ length: 6 }, (_, d) => ({
      modelInput: Int32Array.from({ length }, (_, t) => (t * 7 + d) % 1000),
      lossFnInputs: {
        target_tokens: Int32Array.from({ length }, (_, t) => (t * 13 + d) % 1000),
        logprobs: Float32Array.from({ length }, (_, t) => -((t % 97) + d + 1) / 64),
        advantages: Float32Array.from({ length }, () => (d - 2.5) / 4),
      },
    }));
    const { fake, engine } = await startTinker(
      open,
      { flavor: 'skyrl', pendingPolls: 0 },
      { maxDatumsPerRequest: 2 },
    );
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    const before = processBytePool.stats().reused;
    await model.forwardBackward(data, 'importance_sampling');
    // chunks 2 and 3 at least are written into the buffer chunk 1 gave back
    expect(processBytePool.stats().reused - before).toBeGreaterThanOrEqual(2);
    const sent = fake.requestsTo('forward_backward') as Array<{
      forward_backward_input: {
        data: Array<{
          model_input: { chunks: Array<{ tokens: number[] }> };
          loss_fn_inputs: Record<string, { data: number[] }>;
        }>;
      };
    }>;
    const received = sent.flatMap((request) => request.forward_backward_input.data);
    expect(received).toHaveLength(data.length);
    received.forEach((datum, d) => {
      const inputs = data[d]!.lossFnInputs;
      expect(datum.model_input.chunks[0]!.tokens).toEqual(Array.from(data[d]!.modelInput));
      for (const name of ['target_tokens', 'logprobs', 'advantages']) {
        expect(datum.loss_fn_inputs[name]!.data.map(Math.fround)).toEqual(
          Array.from(inputs[name]!),
        );
      }
    });
  });
});

describe('adam_params as the server applies them', () => {
  it.each([
    [
      'skyrl-jax',
      { flavor: 'skyrl' } as const,
      { learning_rate: 1e-4, beta1: 0.9, beta2: 0.95, eps: 1e-12, weight_decay: 0 },
    ],
    ['skyrl-fsdp', { flavor: 'skyrl', skyrlBackend: 'fsdp' } as const, { learning_rate: 1e-4 }],
    [
      'tinker',
      { flavor: 'tinker' } as const,
      {
        learning_rate: 1e-4,
        beta1: 0.9,
        beta2: 0.95,
        eps: 1e-12,
        weight_decay: 0,
        grad_clip_norm: 0.5,
      },
    ],
  ])('%s', async (_name, server, applied) => {
    const { fake, engine } = await startTinker(open, { pendingPolls: 0, ...server });
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    await model.optimStep({ ...adam, gradClipNorm: 0.5 });
    expect(fake.appliedGradients(model.id)[0]!.adam).toEqual(applied);
  });
});

async function trainerAndSampler(server: FakeTinkerOptions) {
  const started = await startTinker(open, { pendingPolls: 0, ...server });
  const sampler = await TinkerSamplingEngine.connect(
    { name: 'own-sampler', baseUrl: started.fake.url, baseModel: 'b', heartbeatIntervalMs: 0 },
    { timers: started.time.timers },
  );
  open.push(sampler);
  const model = await started.engine.createModel({ baseModel: 'b', loraRank: 8 });
  const train = async () => {
    await model.forwardBackward([isDatum([0, 0, 1, 1], 1)], 'importance_sampling');
    await model.optimStep(adam);
  };
  const sample = (name: string) =>
    sampler.sample({ prompt: [1, 2], n: 1, maxTokens: 2, temperature: 1, topP: 1, model: name });
  return { ...started, sampler, model, train, sample };
}

describe('sampling a checkpoint through the trainer server', () => {
  it('skyrl-jax: loads it into the slot being trained, and keeps the mark after training', async () => {
    const { fake, sampler, model, train, sample } = await trainerAndSampler({ flavor: 'skyrl' });
    const step0 = await model.saveWeightsForSampler('step-0');
    await sampler.loadWeights({ name: 'ref', path: step0.path });
    await train();
    await train();
    expect(fake.trainedSteps(model.id)).toBe(2);
    await sample('ref'); // the step-0 export replaces the trained weights
    expect(fake.trainedSteps(model.id)).toBe(0);
    expect(fake.overwrites).toEqual([{ modelId: model.id, checkpoint: 'step-0', from: 2, to: 0 }]);
    await train();
    const [again] = await sample('ref'); // still marked loaded: samples the trained weights
    expect(again!.logprobs[0]).toBeCloseTo(-1 / 10 / 2, 6); // fake-sampling.ts at 1 step
  });

  it('skyrl-fsdp: ignores the checkpoint and samples the last synced weights', async () => {
    const { sampler, model, train, sample } = await trainerAndSampler({
      flavor: 'skyrl',
      skyrlBackend: 'fsdp',
    });
    const step0 = await model.saveWeightsForSampler('step-0');
    await sampler.loadWeights({ name: 'ref', path: step0.path });
    await train();
    await model.saveWeightsForSampler('step-1');
    const [ref] = await sample('ref');
    expect(ref!.logprobs[0]).toBeCloseTo(-1 / 10 / 2, 6); // step 1's weights, not step 0's
    await expect(
      sampler.sample({ prompt: [1], n: 1, maxTokens: 1, temperature: 1, topP: 1 }),
    ).rejects.toThrow(/unknown model_id/);
  });

  it('skyrl-fsdp: a second model on the server fails (one LoRA adapter per worker group)', async () => {
    const { engine } = await startTinker(open, {
      pendingPolls: 0,
      flavor: 'skyrl',
      skyrlBackend: 'fsdp',
    });
    await engine.createModel({ baseModel: 'b', loraRank: 8 });
    const second = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    await expect(second.optimStep(adam)).rejects.toThrow(/register_adapter is not implemented/);
  });

  it('tinker: every checkpoint samples its own weights; training weights untouched', async () => {
    const { fake, sampler, model, train, sample } = await trainerAndSampler({ flavor: 'tinker' });
    const step0 = await model.saveWeightsForSampler('step-0');
    await sampler.loadWeights({ name: 'ref', path: step0.path });
    await train();
    const [ref] = await sample('ref');
    expect(ref!.logprobs[0]).toBeCloseTo(-1 / 10, 6); // step 0
    expect(fake.trainedSteps(model.id)).toBe(1);
    expect(fake.overwrites).toEqual([]);
  });
});
