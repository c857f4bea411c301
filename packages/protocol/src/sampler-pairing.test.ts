// GRPO through the trainer's own sampler (inference `type: tinker`): refused at submission where
// the backend's sampler cannot serve the pairing (sampler-pairing.ts; docs/engines.md
// "Conformance": skyrl/backends/jax.py load_sampler_weights, skyrl/backends/
// skyrl_train_backend.py _sample_with_remote_client at SkyRL a9564572e).
import { describe, expect, it } from 'vitest';
import { localOperatorConfig, validateOperatorConfig } from './operator-config-parse.ts';
import { resolveRunSpec } from './resolve.ts';
import { parseRunSpec, type RunSpec } from './run-spec/index.ts';
import { referenceNeedsOwnModel } from './sampler-pairing.ts';

function spec(text: string): RunSpec {
  const result = parseRunSpec(text);
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result.value;
}

const local = localOperatorConfig('b'.repeat(64));

function ownSampler(backend?: string) {
  const parsed = validateOperatorConfig({
    ...local,
    inference: { ...local.inference, own: { type: 'tinker', url: 'http://trainer:8000' } },
    trainers: {
      ...local.trainers,
      remote: {
        type: 'tinker',
        url: 'http://trainer:8000',
        capabilities: {
          kinds: ['grpo'],
          losses: ['importance_sampling'],
          ...(backend === 'skyrl-jax' && { reduction: 'mean_per_sequence' }),
        },
        ...(backend && { backend }),
        ...(backend?.startsWith('skyrl') && { pollTimeoutSeconds: 330 }),
      },
    },
    defaults: { ...local.defaults, inference: 'own', trainer: 'remote' },
  });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value;
}

describe('GRPO on the trainer’s own sampler', () => {
  it('skyrl-jax: refuses older policy versions (they would load into the slot being trained)', () => {
    const result = resolveRunSpec(
      spec('kind: grpo\nrollout: {maxPolicyLag: 1}'),
      ownSampler('skyrl-jax'),
    );
    expect(result.ok).toBe(false);
    expect(result.errors).toEqual([
      {
        path: '/rollout/maxPolicyLag',
        reason: 'capability',
        message:
          "inference endpoint 'own' samples through trainer endpoint 'remote' (backend skyrl-jax), " +
          'whose sampler loads a sampled checkpoint into the adapter slot being trained: rollouts ' +
          'of an older policy version (rollout.maxPolicyLag 1) would overwrite the weights in ' +
          'training with that version. Set rollout.maxPolicyLag 0, or sample from a vLLM ' +
          'inference endpoint (docs/engines.md "Conformance")',
      },
    ]);
  });

  it('skyrl-jax at lag 0: accepted, the reference opened as a model of its own', () => {
    expect(resolveRunSpec(spec('kind: grpo'), ownSampler('skyrl-jax')).ok).toBe(true);
    expect(referenceNeedsOwnModel('skyrl-jax')).toBe(true);
    expect(referenceNeedsOwnModel('tinker')).toBe(false);
    expect(referenceNeedsOwnModel(undefined)).toBe(false);
  });

  it('skyrl-fsdp: refused whatever the lag (the reference would be the current policy)', () => {
    const result = resolveRunSpec(spec('kind: grpo'), ownSampler('skyrl-fsdp'));
    expect(result.ok).toBe(false);
    expect(result.errors).toHaveLength(1);
    expect(result.errors![0]).toMatchObject({ path: '/endpoints/inference', reason: 'capability' });
    expect(result.errors![0]!.message).toMatch(
      /^inference endpoint 'own' samples through trainer endpoint 'remote' \(backend skyrl-fsdp\), whose sampler ignores the checkpoint asked for .* trains one model only and cannot sample the base model: the reference rollouts and older policy versions would come from the current policy\. Sample from a vLLM inference endpoint with a trainer of backend skyrl-jax or tinker/,
    );
  });

  it('hosted tinker (every checkpoint its own sampling session) and undeclared backends: accepted', () => {
    const lagged = spec('kind: grpo\nrollout: {maxPolicyLag: 2}');
    expect(resolveRunSpec(lagged, ownSampler('tinker')).ok).toBe(true);
    expect(resolveRunSpec(lagged, ownSampler()).ok).toBe(true);
  });
});
