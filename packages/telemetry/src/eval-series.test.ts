// The per-cell eval gauges (docs/evaluation.md "Eval gauges and the Evaluation row"): one series
// per checkpoint × budget that does not flip between cells, named and labelled by the catalogue's
// rules, bounded, and removed with the run.
import { EvalSpec, TOOL_LIMIT_CAPS } from '@anneal/protocol';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { samples, valueOf } from '../test/prom.ts';
import { METRICS } from './catalogue.ts';
import { EVAL_CELL_BOUNDS, EVAL_CELL_SERIES } from './eval-series.ts';
import type { StepCommitted } from './events.ts';
import { createMetrics, type MetricsSink } from './metrics.ts';
import { lintCatalogue } from './naming.ts';

const sinks: MetricsSink[] = [];
function workerSink(graceMs = 0): MetricsSink {
  const sink = createMetrics(new Registry(), {
    app: 'worker',
    version: 'test',
    worker: { pool: 'gpu', id: 'w-1' },
    runSeriesGraceMs: graceMs,
    defaultMetrics: false,
  });
  sinks.push(sink);
  return sink;
}
afterEach(() => {
  for (const sink of sinks.splice(0)) sink.close();
  vi.useRealTimers();
});

/** An eval cell's step record as the eval executor commits it (eval-cell.ts keys). */
function cell(
  runId: string,
  step: number,
  checkpoint: number,
  budget: number,
  accuracy: number,
  extra: Record<string, number | null> = {},
): StepCommitted {
  return {
    runId,
    step,
    atMs: 1_700_000_000_000 + step * 1000,
    metrics: {
      'eval/checkpoint': checkpoint,
      'eval/budget': budget,
      examples: 20,
      'eval/correct': accuracy * 20,
      accuracy,
      'accuracy/ci_low': accuracy - 0.1,
      'accuracy/ci_high': accuracy + 0.1,
      tool_calls_per_rollout: budget * 0.9,
      broken_tool_call_rate: budget === 0 ? null : 0.05 * budget,
      cost_per_query_usd: 0.001 + budget * 0.005,
      preference_win_rate: checkpoint === 0 ? null : 0.6,
      response_tokens: 40,
      ...extra,
    },
  };
}

describe('eval cell gauges', () => {
  it('are per-run gauges labelled run_id, checkpoint, budget that pass the naming rules', () => {
    const defs = METRICS.filter((m) => m.name.startsWith('anneal_run_eval_'));
    expect(defs.map((m) => m.name)).toEqual(EVAL_CELL_SERIES.map((s) => s.name));
    for (const m of defs) {
      expect(m).toMatchObject({ type: 'gauge', scope: 'run', emittedBy: ['worker'] });
      expect(m.labels).toEqual(['run_id', 'checkpoint', 'budget']);
    }
    expect(lintCatalogue(METRICS)).toEqual([]);
  });

  it('bound the labels by the eval spec: 16 checkpoints, budgets 0..100', () => {
    expect(EVAL_CELL_BOUNDS).toEqual({
      checkpoints: EvalSpec.properties.models.maxItems,
      maxBudget: TOOL_LIMIT_CAPS.maxCallsPerRollout,
    });
    expect(EVAL_CELL_BOUNDS.checkpoints * (EVAL_CELL_BOUNDS.maxBudget + 1)).toBe(16 * 101);
  });

  it('keep one series per cell: later cells do not overwrite earlier ones', async () => {
    const sink = workerSink();
    const r = sink.registry;
    sink.emit('step:committed', cell('e1', 1, 0, 0, 0.2));
    sink.emit('step:committed', cell('e1', 2, 0, 3, 0.5));
    sink.emit('step:committed', cell('e1', 3, 1, 0, 0.25));
    sink.emit('step:committed', cell('e1', 4, 1, 3, 0.7));
    const at = (checkpoint: string, budget: string) => ({ run_id: 'e1', checkpoint, budget });
    expect(await valueOf(r, 'anneal_run_eval_accuracy_ratio', at('0', '0'))).toBe(0.2);
    expect(await valueOf(r, 'anneal_run_eval_accuracy_ratio', at('0', '3'))).toBe(0.5);
    expect(await valueOf(r, 'anneal_run_eval_accuracy_ratio', at('1', '3'))).toBe(0.7);
    expect(await valueOf(r, 'anneal_run_eval_accuracy_ci_low_ratio', at('1', '3'))).toBeCloseTo(
      0.6,
      12,
    );
    expect(await valueOf(r, 'anneal_run_eval_accuracy_ci_high_ratio', at('0', '0'))).toBeCloseTo(
      0.3,
      12,
    );
    expect(await valueOf(r, 'anneal_run_eval_tool_calls_per_query', at('1', '3'))).toBeCloseTo(
      2.7,
      12,
    );
    expect(await valueOf(r, 'anneal_run_eval_broken_tool_call_ratio', at('0', '3'))).toBeCloseTo(
      0.15,
      12,
    );
    expect(await valueOf(r, 'anneal_run_eval_cost_per_query_usd', at('1', '3'))).toBeCloseTo(
      0.016,
      12,
    );
    expect(await valueOf(r, 'anneal_run_eval_preference_win_ratio', at('1', '0'))).toBe(0.6);
    expect(await samples(r, 'anneal_run_eval_accuracy_ratio')).toHaveLength(4);
    // null: no series (no calls at b = 0; no win rate for checkpoint 0)
    const broken = await samples(r, 'anneal_run_eval_broken_tool_call_ratio');
    expect(broken.map((s) => s.labels['budget'])).toEqual(['3', '3']);
    const win = await samples(r, 'anneal_run_eval_preference_win_ratio');
    expect(win.map((s) => s.labels['checkpoint'])).toEqual(['1', '1']);
    // the run's plain gauge holds the last cell only, which is why these exist
    expect(await valueOf(r, 'anneal_run_tool_calls_per_rollout', { run_id: 'e1' })).toBeCloseTo(
      2.7,
      12,
    );
  });

  it('are not written for a step of another kind', async () => {
    const sink = workerSink();
    sink.emit('step:committed', {
      runId: 'g1',
      step: 1,
      atMs: 0,
      metrics: { loss: 0.3, tool_calls_per_rollout: 2 },
    });
    expect(await samples(sink.registry, 'anneal_run_eval_tool_calls_per_query')).toEqual([]);
  });

  it('refuse a cell outside the bounds before writing anything of the step', async () => {
    const sink = workerSink();
    expect(() => sink.emit('step:committed', cell('e1', 1, 16, 0, 0.5))).toThrow(
      /eval\/checkpoint must be an integer in 0\.\.15 \(got 16\)/,
    );
    expect(() => sink.emit('step:committed', cell('e1', 1, 0, 101, 0.5))).toThrow(
      /eval\/budget must be an integer in 0\.\.100 \(got 101\)/,
    );
    expect(() => sink.emit('step:committed', cell('e1', 1, 0, 1.5, 0.5))).toThrow(RangeError);
    expect(sink.runIds()).toEqual([]);
  });

  it('are removed with the run’s other series after the grace period', async () => {
    vi.useFakeTimers();
    const sink = workerSink(60_000);
    sink.emit('run:started', { runId: 'e1', kind: 'eval', pool: 'gpu', atMs: 0 });
    sink.emit('step:committed', cell('e1', 1, 0, 0, 0.2));
    sink.emit('step:committed', cell('e1', 2, 1, 2, 0.4));
    sink.emit('step:committed', cell('e2', 1, 0, 0, 0.9));
    sink.emit('run:ended', { runId: 'e1', reason: 'succeeded', atMs: 2000 });
    vi.advanceTimersByTime(59_000);
    expect(await samples(sink.registry, 'anneal_run_eval_accuracy_ratio')).toHaveLength(3);
    vi.advanceTimersByTime(1_000);
    const text = await sink.registry.metrics();
    expect(text).not.toMatch(/run_id="e1"/);
    expect(text).toMatch(
      /anneal_run_eval_accuracy_ratio\{run_id="e2",checkpoint="0",budget="0"\} 0\.9/,
    );
  });
});
