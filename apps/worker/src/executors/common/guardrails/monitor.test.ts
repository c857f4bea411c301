import type { EffectiveGuardrailRule } from '@anneal/protocol';
import { describe, expect, it } from 'vitest';
import { GuardrailMonitor, guardrailValue } from './monitor.ts';

const rule = (r: Partial<EffectiveGuardrailRule>): EffectiveGuardrailRule => ({
  name: 'r',
  metric: 'kl',
  when: 'above',
  value: 1,
  forSteps: 1,
  action: 'notify',
  origin: 'spec',
  ...r,
});

/** Steps 1..n with `kl` = values[i]; the step numbers at which the monitor fired. */
function fired(monitor: GuardrailMonitor, values: readonly (number | null)[]): number[] {
  return values.flatMap((kl, i) =>
    monitor.observe(i + 1, { kl }).firings.length > 0 ? [i + 1] : [],
  );
}

describe('GuardrailMonitor', () => {
  it('above/below fire after forSteps consecutive steps, then start a new streak', () => {
    const m = new GuardrailMonitor([rule({ value: 1, forSteps: 2 })]);
    expect(fired(m, [2, 0, 2, 2, 2, 2, 3])).toEqual([4, 6]);
    const below = new GuardrailMonitor([rule({ when: 'below', value: 0 })]);
    expect(fired(below, [1, -1, 0, -0.5])).toEqual([2, 4]);
  });

  it('nonFinite fires on NaN and ±Infinity only; a missing (null) value holds no condition', () => {
    const m = new GuardrailMonitor([rule({ when: 'nonFinite', value: undefined })]);
    expect(fired(m, [1, NaN, null, Infinity, -Infinity, 5])).toEqual([2, 4, 5]);
    const v = m.observe(7, { kl: NaN });
    expect(v.firings[0]?.values).toEqual([{ step: 7, value: 'NaN' }]);
    expect(guardrailValue(-Infinity)).toBe('-Infinity');
  });

  it('spike compares with the median of the last `window` finite values, once 3 are held', () => {
    const m = new GuardrailMonitor([
      rule({ when: 'spike', value: undefined, factor: 3, window: 4 }),
    ]);
    // steps 1-3: fewer than 3 values held; 4: 1 is no spike; 5: 10 > 3 × median(1, 1, 10, 1) = 3
    expect(fired(m, [1, 1, 10, 1, 10])).toEqual([5]);
    const v = m.observe(6, { kl: 100 });
    // window (last 4 finite): 1, 10, 1, 10 -> median 5.5
    expect(v.firings[0]?.median).toBe(5.5);
  });

  it('quiet only when no condition holds; the most severe action wins', () => {
    const m = new GuardrailMonitor([
      rule({ name: 'warn', value: 1, action: 'notify' }),
      rule({ name: 'back', value: 5, forSteps: 2, action: 'rollback' }),
    ]);
    expect(m.observe(1, { kl: 0 })).toMatchObject({ quiet: true, action: null });
    expect(m.observe(2, { kl: 6 })).toMatchObject({ quiet: false, action: 'notify' });
    const third = m.observe(3, { kl: 6 });
    expect(third.action).toBe('rollback');
    expect(third.firings.map((f) => f.rule.name)).toEqual(['warn', 'back']);
  });

  it('rewindTo forgets the taken-back steps: streaks and windows as they were', () => {
    const m = new GuardrailMonitor([rule({ value: 1, forSteps: 3, action: 'rollback' })]);
    fired(m, [0, 2, 2]); // steps 2-3 hold: a streak of 2
    m.rewindTo(1);
    // after the rewind, steps 2-3 run again: the old streak does not count
    expect(m.observe(2, { kl: 2 }).firings).toEqual([]);
    expect(m.observe(3, { kl: 2 }).firings).toEqual([]);
    expect(m.observe(4, { kl: 2 }).firings).toHaveLength(1);
  });
});
