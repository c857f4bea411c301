import { describe, expect, it } from 'vitest';
import { parseRunSpec, validateRunSpec } from './index.ts';

function ok(text: string) {
  const result = parseRunSpec(text);
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result.value;
}

function errors(text: string) {
  const result = parseRunSpec(text);
  if (result.ok) throw new Error('expected errors');
  return result.errors;
}

describe('parseRunSpec defaults (docs/recipe.md values)', () => {
  it('fills GRPO defaults: tool limits §6, 90/10 mix §3, token-level IS §2', () => {
    const spec = ok('kind: grpo\n');
    if (spec.kind !== 'grpo') throw new Error('kind');
    expect(spec.tools).toEqual({ resultsPerCall: 10, maxQueryLength: 250, maxCallsPerRollout: 5 });
    expect(spec.data.mix).toEqual([
      { source: 'search-qa', weight: 0.9 },
      { source: 'rubric-chat', weight: 0.1 },
    ]);
    expect(spec.importanceSampling).toMatchObject({ level: 'token', truncate: false, clipMax: 2 });
    expect(spec.advantage.normalizeStd).toBe(false);
    expect(spec.optimizer).toMatchObject({ beta1: 0.9, beta2: 0.95 });
    expect(spec.reward.gate).toBe(true);
    expect(spec.priority).toBe(50);
    expect(spec.endpoints).toEqual({});
  });

  it('fills eval budgets: 8192 output tokens, temperature 0.6, ≤ 5 calls, sweep 0..10 (§6, §8)', () => {
    const spec = ok('{"kind": "eval"}');
    if (spec.kind !== 'eval') throw new Error('kind');
    expect(spec.budgets.maxOutputTokens).toBe(8192);
    expect(spec.budgets.temperature).toBe(0.6);
    expect(spec.budgets.maxToolCalls).toBe(5);
    expect(spec.budgets.resultsPerCall).toBe(10);
    expect(spec.budgets.toolCallBudgets).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it('keeps user values and fills the rest of a section', () => {
    const spec = ok('kind: grpo\nrollout:\n  groupSize: 4\nimportanceSampling: {truncate: true}\n');
    if (spec.kind !== 'grpo') throw new Error('kind');
    expect(spec.rollout.groupSize).toBe(4);
    expect(spec.rollout.promptsPerStep).toBe(16);
    expect(spec.importanceSampling).toMatchObject({ truncate: true, clipMax: 2 });
  });

  it('defaults rollout.maxPolicyLag to 0 (on-policy) and bounds it to 0..4 (docs/recipe.md "Pipelined GRPO")', () => {
    const spec = ok('kind: grpo\n');
    if (spec.kind !== 'grpo') throw new Error('kind');
    expect(spec.rollout.maxPolicyLag).toBe(0);
    const lagged = ok('kind: grpo\nrollout: {maxPolicyLag: 4}\n');
    if (lagged.kind !== 'grpo') throw new Error('kind');
    expect(lagged.rollout.maxPolicyLag).toBe(4);
    for (const bad of ['5', '-1', '1.5']) {
      const errs = errors(`kind: grpo\nrollout: {maxPolicyLag: ${bad}}\n`);
      expect(errs.map((e) => e.path)).toContain('/rollout/maxPolicyLag');
    }
  });

  it('gives each kind its own steps and learning-rate defaults', () => {
    const sft = ok('kind: sft');
    const rm = ok('kind: rm');
    if (sft.kind !== 'sft' || rm.kind !== 'rm') throw new Error('kind');
    expect(sft.optimizer.learningRate).toBe(1e-4);
    expect(rm.batchSize).toBe(16);
    expect(sft.steps).toBe(200);
  });

  it('does not mutate the input value', () => {
    const input = { kind: 'sft' };
    validateRunSpec(input);
    expect(input).toEqual({ kind: 'sft' });
  });
});

describe('parseRunSpec errors', () => {
  it('rejects unknown fields with their JSON pointer and YAML line', () => {
    const errs = errors('kind: grpo\nrollout:\n  groupSize: 8\n  grupSize: 4\n');
    expect(errs).toEqual([
      { path: '/rollout/grupSize', message: "unknown field 'grupSize'", line: 4 },
    ]);
  });

  it('has no rm `symmetric` switch: a pointwise reward model has only the symmetric loss', () => {
    expect(errors('kind: rm\nsymmetric: false\n')).toEqual([
      { path: '/symmetric', message: "unknown field 'symmetric'", line: 2 },
    ]);
  });

  it('reports out-of-range values by path', () => {
    const errs = errors('{"kind":"grpo","rollout":{"groupSize":1},"priority":101}');
    expect(errs.map((e) => e.path)).toEqual(['/priority', '/rollout/groupSize']);
    expect(errs[1]?.message).toMatch(/greater or equal to 2/);
  });

  it('names the kind field when it is missing or unknown', () => {
    expect(errors('steps: 3')[0]).toMatchObject({
      path: '/kind',
      message: expect.stringMatching(/missing/),
    });
    expect(errors('kind: ppo')[0]).toMatchObject({ path: '/kind', line: 1 });
  });

  it('reports syntax errors with a line', () => {
    const errs = errors('kind: grpo\nrollout: [\n');
    expect(errs[0]?.message).toMatch(/syntax error/);
    expect(errs[0]?.line).toBeGreaterThanOrEqual(2);
  });

  it('requires exactly one model source', () => {
    const run = 'run_01HZZZZZZZZZZZZZZZZZZZZZZZ';
    expect(errors(`kind: sft\nmodel: {base: tiny, checkpoint: {run: ${run}}}`)[0]?.path).toBe(
      '/model',
    );
    expect(ok(`kind: sft\nmodel: {checkpoint: {run: ${run}}}`).model).toEqual({
      checkpoint: { run },
    });
  });

  it("takes model.checkpoint.loadOptimizer as a boolean (the parent's optimizer state, opt-in)", () => {
    const run = 'run_01HZZZZZZZZZZZZZZZZZZZZZZZ';
    const spec = `kind: grpo\nmodel: {checkpoint: {run: ${run}, loadOptimizer: true}}`;
    expect(ok(spec).model).toEqual({ checkpoint: { run, loadOptimizer: true } });
    const bad = errors(`kind: grpo\nmodel: {checkpoint: {run: ${run}, loadOptimizer: 'yes'}}`);
    expect(bad[0]?.path).toBe('/model/checkpoint/loadOptimizer');
  });

  it('rejects malformed run ids and duplicate mix sources', () => {
    expect(errors('kind: sft\nmodel: {checkpoint: {run: abc}}')[0]?.path).toBe(
      '/model/checkpoint/run',
    );
    const dup = errors(
      'kind: grpo\ndata:\n  mix:\n    - {source: a, weight: 1}\n    - {source: a, weight: 2}\n',
    );
    expect(dup[0]).toMatchObject({ path: '/data/mix/1/source', line: 5 });
  });

  it('rejects non-object documents and bad label keys', () => {
    expect(errors('[1, 2]')[0]?.path).toBe('');
    expect(errors('kind: sft\nlabels: {"Bad Key": x}')[0]?.path).toBe('/labels/Bad Key');
  });
});
