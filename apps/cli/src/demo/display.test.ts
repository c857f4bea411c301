import { describe, expect, it } from 'vitest';
import { PlainDisplay, grpoHeader, grpoRow, stepDetail } from './display.ts';
import { demoSizes, FULL_SIZES, QUICK_SIZES } from './specs.ts';

describe('demo display', () => {
  it('GRPO rows line up with the header: R, r_base, s, tools, length, KL, grad', () => {
    const header = grpoHeader();
    const row = grpoRow(12, {
      'reward/all': 0.25,
      'base_reward/all': 0.5,
      preference_score: 0.51234,
      tool_calls_per_rollout: 0.75,
      response_tokens: 9.5,
      train_inference_kl: 2.3e-13,
      grad_norm: null,
    });
    expect(header.split(/ +/).filter(Boolean)).toEqual([
      'step',
      'R',
      'r_base',
      's',
      'tools',
      'length',
      'KL',
      'grad',
    ]);
    expect(row.split(/ +/).filter(Boolean)).toEqual([
      '12',
      '0.25',
      '0.5',
      '0.5123',
      '0.75',
      '9.5',
      '2.30e-13',
      '-',
    ]);
    expect(row.length).toBe(header.length);
  });

  it('plain output: one line per step, no control codes', () => {
    let out = '';
    const display = new PlainDisplay({ write: (t: string) => (out += t) });
    display.phaseStart('sft', 'run_x', 3);
    display.step('sft', 1, { loss: 2.5, grad_norm: 1.25, tokens_per_second: 9 });
    display.phaseStart('grpo', 'run_y', 2);
    display.step('grpo', 1, { 'reward/all': 0.1 });
    display.phaseEnd('grpo', 'done');
    expect(out.split('\n')).toEqual([
      'sft: run run_x, 3 steps',
      'sft step 1/3  loss 2.5  grad 1.25',
      'grpo: run run_y, 2 steps',
      grpoHeader(),
      grpoRow(1, { 'reward/all': 0.1 }),
      'grpo: done',
      '',
    ]);
    expect(out.includes(String.fromCharCode(27))).toBe(false); // no ANSI escapes
  });

  it('step detail shows only what the step reported', () => {
    expect(stepDetail('rm', { loss: 0.5, pair_accuracy: 0.75 })).toBe('loss 0.5  pair acc 0.75');
    expect(stepDetail('rm', { loss: 0.5, pair_accuracy: 1, heldout_pair_accuracy: 0.9 })).toBe(
      'loss 0.5  pair acc 1  held-out acc 0.9',
    );
  });
});

describe('demo sizes', () => {
  it('scales the step counts of sft, rm and grpo, at least one step each', () => {
    const half = demoSizes({ seed: 0, stepsScale: 0.5, quick: false });
    expect(half.sft.steps).toBe(Math.round(FULL_SIZES.sft.steps / 2));
    expect(half.grpo.steps).toBe(Math.round(FULL_SIZES.grpo.steps / 2));
    expect(half.grpo.promptsPerStep).toBe(FULL_SIZES.grpo.promptsPerStep);
    const tiny = demoSizes({ seed: 0, stepsScale: 0.001, quick: true });
    expect([tiny.sft.steps, tiny.rm.steps, tiny.grpo.steps]).toEqual([1, 1, 1]);
    expect(demoSizes({ seed: 0, stepsScale: 1, quick: true })).toEqual(QUICK_SIZES);
  });
});
