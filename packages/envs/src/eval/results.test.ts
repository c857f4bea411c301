import { describe, expect, it } from 'vitest';
import { EVAL_CELL_KEYS as K, evalCurves, type StepLike } from './results.ts';

const cell = (
  step: number,
  checkpoint: number,
  budget: number,
  accuracy: number,
  cost: number | null,
): StepLike => ({
  step,
  metrics: {
    [K.checkpoint]: checkpoint,
    [K.budget]: budget,
    [K.examples]: 10,
    [K.accuracy]: accuracy,
    [K.costPerQuery]: cost,
  },
});

describe('evalCurves', () => {
  it('groups cells per checkpoint by budget, with knee and frontier', () => {
    const steps = [
      cell(1, 0, 0, 0.2, 0.01),
      cell(2, 0, 2, 0.5, 0.03),
      cell(3, 0, 4, 0.505, 0.05),
      cell(4, 1, 0, 0.3, 0.01),
      cell(5, 1, 2, 0.7, 0.02),
      cell(6, 1, 4, 0.6, 0.04),
      { step: 7, metrics: { accuracy: 1 } }, // not a cell: ignored
      cell(8, 1, 2, 0.1, 0.01), // repeated cell: the first step wins
    ];
    const out = evalCurves(['sft', 'grpo'], [0, 2, 4], steps);
    expect(out.complete).toBe(true);
    expect(out.checkpoints.map((c) => c.cells.map((x) => x.budget))).toEqual([
      [0, 2, 4],
      [0, 2, 4],
    ]);
    expect(out.checkpoints[0]!.knee).toBe(2); // 0.5 within a point of 0.505
    expect(out.checkpoints[1]!.knee).toBe(2);
    expect(out.checkpoints[1]!.bestAccuracy).toBe(0.7);
    expect(out.checkpoints[1]!.cells[1]!.step).toBe(5);
    // cheapest first: grpo b0 (0.3 at 0.01; sft b0 ties on cost with less accuracy), grpo b2
    expect(out.frontier.map((p) => [p.label, p.budget])).toEqual([
      ['grpo', 0],
      ['grpo', 2],
    ]);
  });

  it('reports incomplete sweeps and ignores unknown checkpoints', () => {
    const out = evalCurves(['a'], [0, 1], [cell(1, 0, 0, 0.5, null), cell(2, 3, 1, 0.9, null)]);
    expect(out.complete).toBe(false);
    expect(out.checkpoints[0]!.cells).toHaveLength(1);
    expect(out.frontier).toEqual([]);
  });
});
