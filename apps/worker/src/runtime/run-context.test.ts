import { describe, expect, it } from 'vitest';
import { checkMetrics } from './run-context.ts';

describe('checkMetrics (commitStep input)', () => {
  it('accepts table keys, open keys and custom metrics', () => {
    expect(() =>
      checkMetrics(3, { loss: -0.2, 'tool_baseline/g4': null, custom_metric: 1 }),
    ).not.toThrow();
  });

  it('rejects what the wire envelope rejects', () => {
    expect(() => checkMetrics(3, { 'bad key': 1 })).toThrow(/^commitStep\(3\): metrics/);
  });

  it('rejects a negative value of a key the step-metric table says cannot be', () => {
    expect(() => checkMetrics(3, { 'phase_seconds/train': -1 })).toThrow(
      /^commitStep\(3\): metrics\/phase_seconds\/train: /,
    );
    expect(() => checkMetrics(3, { rollout_tokens: -5 })).toThrow(/rollout_tokens/);
    expect(() => checkMetrics(4, { loss: Number.NaN })).toThrow(
      'commitStep(4): metrics/loss is NaN (not finite): the step is not recorded',
    );
    expect(() => checkMetrics(4, { grad_norm: Number.POSITIVE_INFINITY })).toThrow(
      /metrics\/grad_norm is Infinity/,
    );
  });
});
