// GRPO set-up repeats the submission check of a run on its trainer's own sampler (the operator
// config may have changed since): @anneal/protocol ownSamplerIssue, docs/engines.md "Conformance".
import { validateRunSpec, type GrpoSpec } from '@anneal/protocol';
import { describe, expect, it } from 'vitest';
import { RunSetupError } from '../../errors.ts';
import { memoryContext } from '../../../test/executors/fakes.ts';
import type { RunResources } from '../types.ts';
import { checkOwnSampler } from './setup.ts';

function grpo(maxPolicyLag: number): GrpoSpec {
  const parsed = validateRunSpec({
    kind: 'grpo',
    rollout: { maxPolicyLag },
    endpoints: { trainer: 'skyrl', inference: 'own' },
  });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value as GrpoSpec;
}

const ctxFor = (spec: GrpoSpec, ownSampler?: RunResources['ownSampler']) =>
  memoryContext(spec, { ...(ownSampler && { ownSampler }) } as RunResources);

describe('GRPO set-up on the trainer’s own sampler', () => {
  it('refuses older policy versions on skyrl-jax, naming the field', () => {
    const spec = grpo(1);
    expect(() => checkOwnSampler(ctxFor(spec, { backend: 'skyrl-jax' }), spec)).toThrow(
      RunSetupError,
    );
    expect(() => checkOwnSampler(ctxFor(spec, { backend: 'skyrl-jax' }), spec)).toThrow(
      /^\/rollout\/maxPolicyLag: inference endpoint 'own' samples through trainer endpoint 'skyrl' \(backend skyrl-jax\)/,
    );
  });

  it('refuses skyrl-fsdp at any lag; accepts skyrl-jax at lag 0, hosted tinker, no backend, vLLM', () => {
    expect(() => checkOwnSampler(ctxFor(grpo(0), { backend: 'skyrl-fsdp' }), grpo(0))).toThrow(
      /^\/endpoints\/inference: /,
    );
    for (const [spec, own] of [
      [grpo(0), { backend: 'skyrl-jax' }],
      [grpo(3), { backend: 'tinker' }],
      [grpo(3), { backend: undefined }],
      [grpo(3), undefined],
    ] as const) {
      expect(() => checkOwnSampler(ctxFor(spec, own), spec)).not.toThrow();
    }
  });
});
