import type { EvalCell, EvalResults } from '@anneal/protocol';
import { describe, expect, it } from 'vitest';
import { compareTable, resultsCsv, resultsTable } from './results.ts';

const cell = (budget: number, accuracy: number, cost: number | null): EvalCell => ({
  budget,
  step: budget + 1,
  n: 10,
  accuracy,
  accuracyLow: accuracy - 0.1,
  accuracyHigh: accuracy + 0.1,
  meanToolCalls: budget / 2,
  brokenToolCallRate: null,
  abstention: null,
  falseAbstention: null,
  languageMismatch: 0,
  preferenceWinRate: null,
  promptTokens: 120,
  completionTokens: 30,
  costPerQueryUsd: cost,
});

const results = (runId: string, accs: number[], label = 'sft,"x"'): EvalResults => ({
  runId,
  state: 'succeeded',
  datasets: ['search-qa'],
  budgets: [0, 1],
  prices: { promptPerMillionTokens: 1, completionPerMillionTokens: 1, perToolCall: 0.01 },
  complete: true,
  checkpoints: [
    {
      index: 0,
      label,
      prices: { promptPerMillionTokens: 1, completionPerMillionTokens: 1, perToolCall: 0.01 },
      cells: accs.map((a, b) => cell(b, a, 0.001 + b * 0.01)),
      bestAccuracy: Math.max(...accs),
      knee: 1,
    },
  ],
  frontier: [{ checkpoint: 0, label, budget: 0, costPerQueryUsd: 0.001, accuracy: accs[0]! }],
});

describe('eval results output', () => {
  it('table: one row per budget with interval and cents, then knee and frontier', () => {
    const text = resultsTable(results('run_a', [0.4, 0.6]));
    expect(text).toMatch(/60\.0%\s+50\.0%–70\.0%/);
    expect(text).toContain('1.100¢'); // 0.011 USD
    expect(text).toContain(
      'knee at b = 1 (smallest budget within 1 point of the best); priced at $1/1M prompt tok, $1/1M compl tok, 1.000¢/tool call',
    );
    expect(text).toContain('cost–accuracy frontier: sft,"x" b=0 40.0% at 0.100¢');
  });

  it('table: a checkpoint costed at zero prices says nothing about prices', () => {
    const r = results('run_a', [0.4, 0.6]);
    const free = { promptPerMillionTokens: 0, completionPerMillionTokens: 0, perToolCall: 0 };
    const text = resultsTable({
      ...r,
      checkpoints: r.checkpoints.map((c) => ({ ...c, prices: free })),
    });
    expect(text).toContain('knee at b = 1 (smallest budget within 1 point of the best)\n');
    expect(text).not.toContain('priced at');
  });

  it('csv: header, RFC 4180 quoting, empty fields for null', () => {
    const lines = resultsCsv(results('run_a', [0.4, 0.6])).split('\r\n');
    expect(lines[0]).toMatch(/^checkpoint,label,budget,n,accuracy,/);
    expect(lines[1]).toBe('0,"sft,""x""",0,10,0.4,0.30000000000000004,0.5,0,,,,0,,120,30,0.001');
    expect(lines).toHaveLength(4); // header, 2 rows, trailing empty
  });

  it('compare: per-budget deltas B − A', () => {
    const text = compareTable(
      results('run_a', [0.4, 0.6], 'a'),
      results('run_b', [0.5, 0.55], 'b'),
    );
    expect(text).toContain('A = run_a (search-qa), B = run_b (search-qa)');
    expect(text).toMatch(/a \/ b\s+0\s+40\.0%\s+50\.0%\s+\+10\.0 pts/);
    expect(text).toMatch(/a \/ b\s+1\s+60\.0%\s+55\.0%\s+−5\.0 pts/);
  });
});
