// Adapter capacity in the operator config (checked as vLLM checks its flags:
// vllm/config/lora.py@01230b40 `LoRAConfig`) and a run's demand per endpoint.
import { describe, expect, it } from 'vitest';
import {
  adapterCapacities,
  adapterDemandIssues,
  runAdapterDemand,
  sharedReferenceKey,
} from './adapter-capacity.ts';
import { localOperatorConfig, validateOperatorConfig } from './operator-config-parse.ts';
import { resolveRunSpec } from './resolve.ts';
import { parseRunSpec } from './run-spec/index.ts';

const local = localOperatorConfig('b'.repeat(64));

function config(vllm: Record<string, unknown>, trainer: Record<string, unknown> = {}) {
  return validateOperatorConfig({
    ...local,
    inference: {
      ...local.inference,
      gen: {
        type: 'vllm',
        replicas: ['http://gpu-1:8000'],
        logprobsMode: 'processed_logprobs',
        maxLoraRank: 32,
        ...vllm,
      },
    },
    trainers: {
      ...local.trainers,
      skyrl: {
        type: 'tinker',
        url: 'http://trainer:8000',
        backend: 'skyrl-jax',
        pollTimeoutSeconds: 330,
        capabilities: {
          kinds: ['sft', 'grpo'],
          losses: ['cross_entropy', 'importance_sampling'],
          reduction: 'mean_per_sequence',
        },
        ...trainer,
      },
    },
    defaults: { ...local.defaults, inference: 'gen', trainer: 'skyrl' },
  });
}

function ok(vllm: Record<string, unknown>, trainer: Record<string, unknown> = {}) {
  const parsed = config(vllm, trainer);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value;
}

const errorsOf = (vllm: Record<string, unknown>) => {
  const parsed = config(vllm);
  return parsed.ok ? [] : parsed.errors.map((e) => `${e.path}: ${e.message}`);
};

function demandOf(yaml: string, operator = ok({ maxLoras: 8 }, { maxModels: 31 })) {
  const parsed = parseRunSpec(yaml);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  const resolved = resolveRunSpec(parsed.value, operator);
  if (!resolved.ok) throw new Error(JSON.stringify(resolved.errors));
  return runAdapterDemand(resolved.value, operator);
}

describe('declared adapter capacity', () => {
  it('reads maxLoras, maxCpuLoras, oversubscribe and a trainer maxModels', () => {
    const operator = ok({ maxLoras: 8, maxCpuLoras: 16, oversubscribe: true }, { maxModels: 31 });
    expect(adapterCapacities(operator)).toEqual([
      { role: 'inference', endpoint: 'gen', slots: 8, oversubscribe: true },
      { role: 'trainer', endpoint: 'skyrl', slots: 31, oversubscribe: false },
    ]);
  });

  it('refuses what vLLM itself refuses, naming the field', () => {
    expect(errorsOf({ maxLoras: 8, maxCpuLoras: 4 })).toEqual([
      '/inference/gen/maxCpuLoras: maxCpuLoras 4 is below maxLoras 8 (vLLM refuses to start with --max-cpu-loras < --max-loras)',
    ]);
    expect(errorsOf({ maxLoraRank: 24 })).toEqual([
      '/inference/gen/maxLoraRank: vLLM accepts --max-lora-rank 1, 8, 16, 32, 64, 128, 256, 320, 512 only, not 24',
    ]);
    expect(errorsOf({ maxCpuLoras: 4 })).toEqual([
      '/inference/gen/maxCpuLoras: maxCpuLoras needs maxLoras (the batch slots runs are admitted against)',
    ]);
    expect(errorsOf({ oversubscribe: true })).toEqual([
      '/inference/gen/oversubscribe: oversubscribe needs maxLoras (there is nothing to oversubscribe)',
    ]);
    expect(errorsOf({ maxLoras: 0 }).join()).toContain('/inference/gen/maxLoras');
  });
});

describe("a run's demand", () => {
  it('grpo: reference + maxPolicyLag + 1 policy versions + one during a sync; trainer: 2 models', () => {
    expect(demandOf('kind: grpo\nrollout: {maxPolicyLag: 2}\n')).toEqual([
      {
        role: 'inference',
        endpoint: 'gen',
        slots: 5,
        detail: 'reference 1 + policy versions 3 (maxPolicyLag + 1) + sync 1',
      },
      { role: 'trainer', endpoint: 'skyrl', slots: 2, detail: 'policy 1 + reference export 1' },
    ]);
  });

  it('sft holds one trainer model and no adapter on the sampler', () => {
    expect(demandOf('kind: sft\n')).toEqual([
      { role: 'trainer', endpoint: 'skyrl', slots: 1, detail: 'trained model 1' },
    ]);
  });

  it('an embedded sampler and trainer have no slots to hold', () => {
    expect(demandOf('kind: grpo\nendpoints: {inference: embedded, trainer: embedded}\n')).toEqual(
      [],
    );
  });

  it('a demand larger than an endpoint is an issue unless it may be oversubscribed', () => {
    const demand = demandOf('kind: grpo\nrollout: {maxPolicyLag: 4}\n');
    expect(adapterDemandIssues(demand, ok({ maxLoras: 6 }, { maxModels: 31 }))).toEqual([
      {
        path: '/endpoints/inference',
        message: expect.stringContaining(
          "'gen' holds 6 adapter slots (maxLoras) and this run needs 7",
        ) as unknown,
      },
    ]);
    expect(adapterDemandIssues(demand, ok({ maxLoras: 6, oversubscribe: true }))).toEqual([]);
  });
});

describe('shared references', () => {
  const operator = ok({ maxLoras: 8 });
  function keyOf(yaml: string) {
    const parsed = parseRunSpec(yaml);
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    const resolved = resolveRunSpec(parsed.value, operator);
    if (!resolved.ok) throw new Error(JSON.stringify(resolved.errors));
    return { key: sharedReferenceKey(resolved.value, operator), spec: resolved.value };
  }

  it('keys a GRPO run by its starting weights: same start, same key; any other start, another', () => {
    const a = keyOf('kind: grpo\nseed: 1\noptimizer: {learningRate: 0.001}\n').key;
    const b = keyOf('kind: grpo\nseed: 2\nrollout: {maxPolicyLag: 2}\n').key;
    expect(a).toBeDefined();
    expect(b).toBe(a); // seed, learning rate, lag: not the starting weights
    expect(keyOf('kind: grpo\nlora: {rank: 16}\n').key).not.toBe(a);
    const fork =
      'kind: grpo\nmodel: {checkpoint: {run: run_01HZZZZZZZZZZZZZZZZZZZZZZZ, step: 10}}\n';
    expect(keyOf(fork).key).not.toBe(a);
    expect(keyOf(fork).key).toBe(keyOf(fork + 'seed: 9\n').key);
    expect(keyOf(fork.replace('10', '20')).key).not.toBe(keyOf(fork).key);
  });

  it('shares no reference where it cannot: a final checkpoint that may move, other kinds', () => {
    expect(
      keyOf('kind: grpo\nmodel: {checkpoint: {run: run_01HZZZZZZZZZZZZZZZZZZZZZZZ}}\n').key,
    ).toBeUndefined();
    expect(keyOf('kind: sft\n').key).toBeUndefined();
  });

  it('a shared reference is named on the demand and counted in its slots', () => {
    const { spec } = keyOf('kind: grpo\n');
    const demand = runAdapterDemand(spec, operator, 'ref-0123456789abcdef');
    expect(demand[0]).toMatchObject({
      role: 'inference',
      endpoint: 'gen',
      slots: 3,
      detail: 'shared reference 1 + policy versions 1 (maxPolicyLag + 1) + sync 1',
      reference: 'ref-0123456789abcdef',
    });
    expect(runAdapterDemand(spec, operator)[0]).not.toHaveProperty('reference');
  });
});
