import { describe, expect, it } from 'vitest';
import {
  KIND_LOSSES,
  SKYRL_JAX_CAPABILITIES,
  TINKER_CAPABILITIES,
  checkRunSupported,
} from './capabilities.ts';
import type { TrainerCapabilities } from './types.ts';

const embedded: TrainerCapabilities = {
  kinds: ['sft', 'rm', 'grpo', 'eval'],
  losses: ['cross_entropy', 'importance_sampling', 'ppo', 'bradley_terry'],
  reduction: 'sum',
};

describe('checkRunSupported', () => {
  it('rejects rm on a Tinker backend with a message that says what to do', () => {
    expect(checkRunSupported(TINKER_CAPABILITIES, 'rm', 'tinker-prod')).toBe(
      "trainer endpoint 'tinker-prod' cannot run kind 'rm': it supports losses " +
        '[cross_entropy, importance_sampling, ppo]; rm needs bradley_terry ' +
        '(use the embedded trainer or another rm-capable backend)',
    );
  });

  it('accepts what the endpoint declares', () => {
    for (const kind of ['sft', 'grpo', 'eval'] as const) {
      expect(checkRunSupported(TINKER_CAPABILITIES, kind)).toBeUndefined();
      expect(checkRunSupported(SKYRL_JAX_CAPABILITIES, kind)).toBeUndefined();
    }
    expect(checkRunSupported(embedded, 'rm')).toBeUndefined();
  });

  it('grpo needs importance_sampling, as the control plane requires (one shared table)', () => {
    expect(KIND_LOSSES.grpo).toEqual(['importance_sampling']);
    const ppoOnly: TrainerCapabilities = { ...TINKER_CAPABILITIES, losses: ['ppo'] };
    expect(checkRunSupported(ppoOnly, 'grpo', 'skyrl')).toBe(
      "trainer endpoint 'skyrl' cannot run kind 'grpo': it supports losses [ppo]; grpo needs " +
        'importance_sampling (register an endpoint that declares grpo)',
    );
  });

  it('rejects a kind the endpoint does not declare even when it has the loss', () => {
    const sftOnly: TrainerCapabilities = { ...TINKER_CAPABILITIES, kinds: ['sft'] };
    expect(checkRunSupported(sftOnly, 'grpo', 'ce-only')).toBe(
      "trainer endpoint 'ce-only' cannot run kind 'grpo': it declares kinds [sft] " +
        '(register an endpoint that declares grpo)',
    );
  });
});
