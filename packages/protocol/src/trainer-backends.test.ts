// Trainer backends in the operator config: the declared `backend`, its traits (reduction,
// sampler export kind, grad clipping), the future-polling settings, and the hosted-sampling
// inference endpoint (`type: tinker`).
import { describe, expect, it } from 'vitest';
import { TRAINER_BACKEND_TRAITS, gradClipNotice } from './capabilities.ts';
import { parseOperatorConfig } from './operator-config-parse.ts';

const HASH = 'a'.repeat(64);
const config = (trainer: string, inference = '{type: embedded}') => `
pools: {gpu: {slots: 1}}
inference:
  main: ${inference}
trainers:
  skyrl: ${trainer}
tenants: {acme: {}}
tokens:
  - {name: alice, sha256: ${HASH}, role: submitter, tenant: acme}
`;
const CAPS = 'capabilities: {kinds: [sft, grpo], losses: [cross_entropy, importance_sampling]';

function parsed(text: string) {
  const result = parseOperatorConfig(text);
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result.value;
}

function errorsOf(text: string) {
  const result = parseOperatorConfig(text);
  if (result.ok) throw new Error('expected errors');
  return result.errors;
}

describe('trainer backends', () => {
  it('declares per backend the reduction, its divisor, sampler export kind, grad clipping and sampling', () => {
    expect(TRAINER_BACKEND_TRAITS['skyrl-jax']).toMatchObject({
      reduction: 'mean_per_sequence',
      lossDivisor: 'weight-sum-then-datums',
      samplerExport: 'lora',
      samplerSync: 'export',
      gradClip: 'ignored',
      checkpointSampling: 'loads-into-training-slot',
      models: 'many',
    });
    expect(TRAINER_BACKEND_TRAITS['skyrl-fsdp']).toMatchObject({
      reduction: 'sum',
      lossDivisor: 'nothing',
      // skyrl_train_backend.py@a9564572e save_sampler_checkpoint -> fsdp_strategy.py save_hf_model
      // -> PeftModel.save_pretrained (a PEFT adapter), after syncing its own inference engines
      samplerExport: 'lora',
      samplerSync: 'colocated-engines',
      gradClip: 'server-configured',
      checkpointSampling: 'latest-synced',
      samplesBaseModel: false,
      models: 'one',
    });
    expect(TRAINER_BACKEND_TRAITS.tinker).toMatchObject({
      reduction: 'sum',
      lossDivisor: 'nothing',
      samplerExport: 'lora',
      gradClip: 'per-request',
      checkpointSampling: 'isolated',
    });
  });

  it('says when a backend does not apply the requested gradient clipping', () => {
    expect(gradClipNotice('skyrl-jax', 1, 'gpu-trainer')).toBe(
      "optimizer.gradClipNorm 1 is not applied: trainer endpoint 'gpu-trainer' (backend skyrl-jax) " +
        'ignores grad_clip_norm and does not clip, so gradients are unclipped (docs/engines.md "Gradient norm")',
    );
    expect(gradClipNotice('skyrl-fsdp', 0.5)).toMatch(
      /^optimizer.gradClipNorm 0.5 is not applied: the trainer endpoint \(backend skyrl-fsdp\) ignores grad_clip_norm and clips at its own server-configured max_grad_norm/,
    );
    expect(gradClipNotice('tinker', 1)).toBeUndefined();
    expect(gradClipNotice('embedded', 1)).toBeUndefined();
    expect(gradClipNotice('skyrl-jax', 0)).toBeUndefined(); // no clipping asked for
  });

  it('accepts a backend with its future-polling settings', () => {
    const value = parsed(
      config(
        `{type: tinker, url: "http://t:8000", backend: skyrl-jax, pollTimeoutSeconds: 400,
          operationDeadlineSeconds: 7200, ${CAPS}, reduction: mean_per_sequence}}`,
      ),
    );
    expect(value.trainers.skyrl).toMatchObject({
      backend: 'skyrl-jax',
      pollTimeoutSeconds: 400,
      operationDeadlineSeconds: 7200,
    });
  });

  it("refuses a reduction that contradicts the declared backend's", () => {
    const errors = errorsOf(
      config(`{type: tinker, url: "http://t:8000", backend: skyrl-jax, ${CAPS}}}`),
    );
    expect(errors).toContainEqual(
      expect.objectContaining({
        path: '/trainers/skyrl/capabilities/reduction',
        message: expect.stringMatching(
          /backend skyrl-jax reduces token losses as mean_per_sequence, not sum/,
        ),
      }),
    );
  });

  it("refuses a poll timeout that SkyRL's 300 s hold would always exceed", () => {
    const errors = errorsOf(
      config(
        `{type: tinker, url: "http://t:8000", backend: skyrl-fsdp, pollTimeoutSeconds: 60, ${CAPS}}}`,
      ),
    );
    expect(errors).toContainEqual(
      expect.objectContaining({
        path: '/trainers/skyrl/pollTimeoutSeconds',
        message: expect.stringMatching(/holds each retrieve_future call up to 300 s/),
      }),
    );
  });

  it('refuses an unknown backend, naming the field', () => {
    const errors = errorsOf(
      config(`{type: tinker, url: "http://t:8000", backend: megatron, ${CAPS}}}`),
    );
    expect(errors.map((e) => e.path)).toContain('/trainers/skyrl/backend');
  });

  it('accepts a hosted-sampling inference endpoint (type: tinker)', () => {
    const value = parsed(
      config(
        `{type: tinker, url: "http://t:8000", backend: tinker, ${CAPS}}}`,
        '{type: tinker, url: "https://tinker.example/", apiKeyEnv: TINKER_API_KEY}',
      ),
    );
    expect(value.inference.main).toEqual({
      type: 'tinker',
      url: 'https://tinker.example/',
      apiKeyEnv: 'TINKER_API_KEY',
      pollTimeoutSeconds: 330,
      operationDeadlineSeconds: 3600,
    });
  });
});
