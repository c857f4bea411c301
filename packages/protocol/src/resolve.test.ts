import { describe, expect, it } from 'vitest';
import { localOperatorConfig, validateOperatorConfig } from './operator-config-parse.ts';
import { resolveRunSpec } from './resolve.ts';
import { parseRunSpec, type RunSpec } from './run-spec/index.ts';

function spec(text: string): RunSpec {
  const result = parseRunSpec(text);
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result.value;
}

const local = localOperatorConfig('b'.repeat(64));

describe('resolveRunSpec', () => {
  it('fills operator defaults for pool, model and the endpoints the kind uses', () => {
    const result = resolveRunSpec(spec('kind: grpo'), local);
    if (!result.ok) throw new Error(JSON.stringify(result.errors));
    expect(result.value.pool).toBe('default');
    expect(result.value.model).toEqual({ base: 'tiny' });
    expect(result.value.endpoints).toEqual({
      inference: 'embedded',
      trainer: 'embedded',
      search: 'local',
    });
    const sft = resolveRunSpec(spec('kind: sft'), local);
    expect(sft.ok && sft.value.endpoints).toEqual({ trainer: 'embedded' });
  });

  it('applies a default keepBest only to the kinds that record its metric', () => {
    const keepBest = { metric: 'reward/all', order: 'max' as const, count: 2 };
    const config = { ...local, defaults: { ...local.defaults, checkpointRetention: { keepBest } } };
    const grpo = resolveRunSpec(spec('kind: grpo'), config);
    const retention = (r: typeof grpo) =>
      r.ok && r.value.kind !== 'eval' ? r.value.checkpointRetention : 'refused';
    expect(retention(grpo)).toEqual({ keepBest });
    const sft = resolveRunSpec(spec('kind: sft\ncheckpointRetention: {keepLast: 2}'), config);
    expect(retention(sft)).toEqual({ keepLast: 2 });
    expect(config.defaults.checkpointRetention).toEqual({ keepBest });
  });

  it('names the field of an unknown resource', () => {
    const result = resolveRunSpec(spec('kind: grpo\npool: gpu\nendpoints: {search: bing}'), local);
    expect(result.ok).toBe(false);
    expect(result.errors?.map((e) => [e.path, e.reason])).toEqual([
      ['/pool', 'unknown'],
      ['/endpoints/search', 'unknown'],
    ]);
    expect(result.errors?.[1]?.message).toBe("unknown search endpoint 'bing' (declared: local)");
  });

  it('rejects a kind or loss the trainer endpoint does not declare', () => {
    const parsed = validateOperatorConfig({
      ...local,
      trainers: {
        sftonly: {
          type: 'embedded',
          capabilities: { kinds: ['sft', 'grpo'], losses: ['cross_entropy'] },
        },
      },
      defaults: { ...local.defaults, trainer: 'sftonly' },
    });
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    const rm = resolveRunSpec(spec('kind: rm'), parsed.value);
    expect(rm.errors?.map((e) => [e.reason, e.path])).toEqual([
      ['capability', '/endpoints/trainer'],
    ]);
    expect(rm.errors?.[0]?.message).toBe(
      "trainer endpoint 'sftonly' cannot run kind 'rm': it supports losses [cross_entropy]; " +
        'rm needs bradley_terry (use the embedded trainer or another rm-capable backend)',
    );
    const grpo = resolveRunSpec(spec('kind: grpo'), parsed.value);
    expect(grpo.errors?.[0]?.message).toMatch(/grpo needs importance_sampling/);
    expect(resolveRunSpec(spec('kind: sft'), parsed.value).ok).toBe(true);
  });

  it('grpo needs importance_sampling: ppo alone is not enough (one table with the worker)', () => {
    const parsed = validateOperatorConfig({
      ...local,
      trainers: {
        ppoonly: {
          type: 'embedded',
          capabilities: { kinds: ['grpo'], losses: ['ppo'] },
        },
      },
      defaults: { ...local.defaults, trainer: 'ppoonly' },
    });
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    const grpo = resolveRunSpec(spec('kind: grpo'), parsed.value);
    expect(grpo.errors?.[0]?.message).toBe(
      "trainer endpoint 'ppoonly' cannot run kind 'grpo': it supports losses [ppo]; grpo needs " +
        'importance_sampling (register an endpoint that declares grpo)',
    );
  });

  it('reports missing required endpoints when there is no default', () => {
    const parsed = validateOperatorConfig({
      ...local,
      defaults: { pool: 'default', baseModel: 'tiny' },
    });
    if (!parsed.ok) throw new Error('config');
    const result = resolveRunSpec(spec('kind: eval'), parsed.value);
    expect(result.errors?.map((e) => [e.path, e.reason])).toEqual([
      ['/endpoints/inference', 'missing'],
      ['/endpoints/search', 'missing'],
      ['/model', 'missing'], // a base model needs a trainer to reach the sampler
    ]);
  });
});
