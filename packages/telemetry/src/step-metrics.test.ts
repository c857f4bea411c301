import { describe, expect, expectTypeOf, it } from 'vitest';
import { lintStepTable } from './naming.ts';
import { stepRecordError, stepRecordSchema } from './step-record-schema.ts';
import { STEP_METRICS, type StepMetricTable } from './step-metrics.ts';
import {
  recordBindings,
  recordKey,
  singleKeys,
  toStepRecord,
  type StepRecordKey,
  type StepRecordMetrics,
} from '@anneal/protocol';

describe('the step-metric table', () => {
  it('breaks none of its rules', () => {
    expect(lintStepTable(STEP_METRICS)).toEqual([]);
  });

  it('derives record keys from templates and per-value maps', () => {
    expect(recordKey(STEP_METRICS.reward, 'qa')).toBe('reward/qa');
    expect(recordKey(STEP_METRICS.trainInferenceKl, 'k3')).toBe('train_inference_kl');
    expect(recordKey(STEP_METRICS.toolBaseline, '3')).toBe('tool_baseline/g3');
    expect(recordBindings(STEP_METRICS.isRatio)).toEqual([
      { key: 'is_ratio/mean', label: { name: 'stat', value: 'mean' } },
      { key: 'is_ratio/min', label: { name: 'stat', value: 'min' } },
      { key: 'is_ratio/max', label: { name: 'stat', value: 'max' } },
    ]);
    expect(singleKeys()).toMatchObject({ loss: 'loss', stepSeconds: 'step_seconds' });
    expect(singleKeys()).not.toHaveProperty('reward');
  });

  it('types the record by its keys', () => {
    expectTypeOf<'reward/rubric'>().toExtend<StepRecordKey>();
    expectTypeOf<'tool_baseline/g12'>().toExtend<StepRecordKey>();
    expectTypeOf<'phase_seconds/train'>().toExtend<StepRecordKey>();
    expectTypeOf<'reward/other'>().not.toExtend<StepRecordKey>();
    expectTypeOf<'gradnorm'>().not.toExtend<StepRecordKey>();
    expectTypeOf(
      recordKey(STEP_METRICS.phaseSeconds, 'train'),
    ).toEqualTypeOf<'phase_seconds/train'>();
  });

  it('drops undefined values when the record is committed', () => {
    const metrics: StepRecordMetrics = { loss: 1, grad_norm: null, accuracy: undefined };
    expect(toStepRecord(metrics)).toEqual({ loss: 1, grad_norm: null });
  });
});

describe('lintStepTable', () => {
  const row = { unit: 'none', kinds: ['grpo'], help: 'x' } as const;
  it.each([
    [{ a: { ...row, key: 'a/{component}' } }, 'a template needs a label'],
    [{ a: { ...row, key: 'a/{stat}', label: 'component' } }, 'holds {component} exactly once'],
    [{ a: { ...row, key: { k1: 'a' }, label: 'estimator' } }, 'but estimator takes {k1,k3}'],
    [{ a: { ...row, key: 'x' }, b: { ...row, key: 'x' } }, 'x is also the key of a'],
    [{ a: { ...row, key: 'bad key' } }, 'bad key is not a valid record key'],
    [
      {
        a: {
          ...row,
          key: 'a/{group}',
          label: 'group',
          series: { name: 'anneal_run_a', type: 'gauge', section: 'reward', title: 'A' },
        },
      },
      'a series needs a closed label',
    ],
  ] as [StepMetricTable, string][])('%j: %s', (table, message) => {
    expect(
      lintStepTable(table)
        .map((v) => v.message)
        .join('; '),
    ).toContain(message);
  });
});

describe('the step-record schema', () => {
  it('accepts a record with known, open and custom keys', () => {
    const record = { loss: -0.3, 'reward/qa': -1, 'tool_baseline/g2': null, custom: 5 };
    expect(stepRecordError(record)).toBeUndefined();
  });

  it('rejects negative counts, durations and ratios, naming the key', () => {
    expect(stepRecordError({ rollout_tokens: -1 })).toMatch(/^metrics\/rollout_tokens: /);
    expect(stepRecordError({ 'phase_seconds/train': -0.5 })).toMatch(/phase_seconds\/train/);
    expect(stepRecordError({ accuracy: -0.1 })).toMatch(/accuracy/);
    expect(stepRecordError({ loss: Number.NaN })).toMatch(/loss/);
  });

  it('follows the table it is derived from', () => {
    const table = {
      kept: { key: 'kept_tokens', unit: 'tokens', kinds: ['sft'], help: 'Kept.' },
    } satisfies StepMetricTable;
    expect(stepRecordError({ kept_tokens: -1 }, stepRecordSchema(table))).toMatch(/kept_tokens/);
    expect(stepRecordError({ kept_tokens: -1 })).toBeUndefined();
    expect(stepRecordSchema(table).properties.kept_tokens?.description).toBe('Kept.');
  });
});
