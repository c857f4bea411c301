import { describe, expect, it } from 'vitest';
import type { RunComparison } from '@anneal/protocol';
import { cellText, comparisonText, letter } from './compare-format.ts';

const comparison: RunComparison = {
  kind: 'sft',
  fields: ['optimizer.learningRate', 'seed'],
  runs: [
    {
      id: 'run_A',
      name: 'lr-low',
      state: 'succeeded',
      differences: { 'optimizer.learningRate': 1e-5, seed: 1 },
      final: { step: 10, metrics: { loss: 0.123456789, grad_norm: 2 } },
    },
    {
      id: 'run_B',
      state: 'running',
      differences: { 'optimizer.learningRate': 3e-5 },
      final: { step: 4, metrics: { loss: 0.5 } },
    },
  ],
};

describe('comparisonText', () => {
  it('letters the runs, then one row per differing field and per final metric', () => {
    expect(comparisonText(comparison)).toBe(
      [
        '2 sft runs',
        'A = run_A (lr-low): succeeded, step 10',
        'B = run_B: running, step 4',
        '',
        'field                   A        B',
        'optimizer.learningRate  0.00001  0.00003',
        'seed                    1        -',
        '',
        'final metric  A         B',
        'grad_norm     2         -',
        'loss          0.123457  0.5',
        '',
      ].join('\n'),
    );
  });

  it('shows only the metrics asked for', () => {
    const text = comparisonText(comparison, ['loss']);
    expect(text).toContain('loss          0.123457  0.5');
    expect(text).not.toContain('grad_norm');
  });
});

describe('letter and cellText', () => {
  it('names columns past Z, and prints values compactly', () => {
    expect([0, 25, 26, 27, 51, 52].map(letter)).toEqual(['A', 'Z', 'AA', 'AB', 'AZ', 'BA']);
    expect([1e-5, 3, null, undefined, 'x', [1, 2]].map(cellText)).toEqual([
      '0.00001',
      '3',
      '-',
      '-',
      'x',
      '[1,2]',
    ]);
  });
});
