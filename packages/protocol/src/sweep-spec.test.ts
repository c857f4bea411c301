import { describe, expect, it } from 'vitest';
import { specDifferences } from './sweep-api.ts';
import { SWEEP_MAX_RUNS, isSweepDocument, parseSweep } from './sweep-spec.ts';

const sweep = (grid: string, extra = '') => `kind: sweep
name: lr-x-len
base:
  kind: grpo
  steps: 4
${extra}grid:
${grid}`;

describe('parseSweep', () => {
  it('expands the grid into one run spec per combination, the first path slowest', () => {
    const parsed = parseSweep(
      sweep(`  optimizer.learningRate: [1.0e-5, 3.0e-5]
  reward.lambdaLen: [0, 0.1, 0.2]
`),
    );
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    expect(parsed.kind).toBe('grpo');
    expect(parsed.points.map((p) => p.values)).toEqual([
      { 'optimizer.learningRate': 1e-5, 'reward.lambdaLen': 0 },
      { 'optimizer.learningRate': 1e-5, 'reward.lambdaLen': 0.1 },
      { 'optimizer.learningRate': 1e-5, 'reward.lambdaLen': 0.2 },
      { 'optimizer.learningRate': 3e-5, 'reward.lambdaLen': 0 },
      { 'optimizer.learningRate': 3e-5, 'reward.lambdaLen': 0.1 },
      { 'optimizer.learningRate': 3e-5, 'reward.lambdaLen': 0.2 },
    ]);
    expect(parsed.points[4]!.spec).toEqual({
      kind: 'grpo',
      steps: 4,
      optimizer: { learningRate: 3e-5 },
      reward: { lambdaLen: 0.1 },
    });
  });

  it('names a grid path that is no field of the kind, with the fields there', () => {
    const parsed = parseSweep(sweep('  optimizer.lr: [1.0e-5]\n'));
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.errors[0]).toMatchObject({ path: '/grid/optimizer.lr', line: 7 });
    expect(parsed.errors[0]!.message).toContain("no field 'lr' in 'optimizer'");
    expect(parsed.errors[0]!.message).toContain('learningRate');
  });

  it('names the grid value a run spec refuses, not the base', () => {
    const parsed = parseSweep(sweep('  optimizer.learningRate: [1.0e-5, -1]\n'));
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.errors).toHaveLength(1);
    expect(parsed.errors[0]!.path).toBe('/grid/optimizer.learningRate/1');
    expect(parsed.errors[0]!.message).toMatch(/^-1 at optimizer\.learningRate: /);
  });

  it('puts an issue of the base under /base', () => {
    const parsed = parseSweep(sweep('  seed: [1, 2]\n', '  rollout: { groupSize: 0 }\n'));
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.errors.map((e) => e.path)).toEqual(['/base/rollout/groupSize']);
  });

  it(`refuses a grid of more than ${SWEEP_MAX_RUNS} runs, saying how many`, () => {
    const parsed = parseSweep(
      sweep('  seed: [1, 2, 3, 4, 5, 6, 7, 8, 9]\n  steps: [1, 2, 3, 4, 5, 6, 7, 8]\n'),
    );
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.tooLarge).toBe(true);
    expect(parsed.errors[0]!.message).toContain('72 runs');
  });

  it('refuses sweeping the kind, and a select metric the kind does not record', () => {
    const parsed = parseSweep(
      sweep('  kind: [grpo, sft]\n', '') + 'select: { metric: eval/accuracy }\n',
    );
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) {
      expect(parsed.errors.map((e) => e.path).sort()).toEqual(['/grid/kind', '/select/metric']);
    }
  });

  it('refuses a base budget beside the sweep budget (the sweep splits its own)', () => {
    const parsed = parseSweep(
      sweep('  seed: [1, 2]\n', '  budget: { maxUsd: 3 }\n') + 'budget: { maxUsd: 10 }\n',
    );
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.errors.map((e) => e.path)).toEqual(['/base/budget']);
  });
});

describe('isSweepDocument', () => {
  it('tells a sweep from a run spec and from text that does not parse', () => {
    expect(isSweepDocument(sweep('  seed: [1]\n'))).toBe(true);
    expect(isSweepDocument('{"kind":"sweep"}')).toBe(true);
    expect(isSweepDocument('kind: grpo\n')).toBe(false);
    expect(isSweepDocument('kind: [')).toBe(false);
  });
});

describe('specDifferences', () => {
  it('lists only the fields whose value differs, a missing one included, without name or labels', () => {
    const { fields, values } = specDifferences([
      {
        kind: 'grpo',
        name: 'a',
        labels: { x: '1' },
        optimizer: { learningRate: 1e-5, beta1: 0.9 },
        data: { mix: [1] },
      },
      {
        kind: 'grpo',
        name: 'b',
        labels: { x: '2' },
        optimizer: { learningRate: 3e-5, beta1: 0.9 },
        data: { mix: [1] },
        budget: { maxUsd: 1 },
      },
    ]);
    expect(fields).toEqual(['budget.maxUsd', 'optimizer.learningRate']);
    expect(values).toEqual([
      { 'optimizer.learningRate': 1e-5 },
      { 'budget.maxUsd': 1, 'optimizer.learningRate': 3e-5 },
    ]);
  });
});
