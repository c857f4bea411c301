import { describe, expect, it } from 'vitest';
import { STEP_USAGE_KEYS } from '@anneal/protocol';
import { AttemptMeter } from './metering.ts';

const prices = {
  promptPerMillionTokens: 0,
  completionPerMillionTokens: 10,
  trainedPerMillionTokens: 0,
  perToolCall: 0.5,
  perJudgeCall: 0.25,
  scoredPerMillionTokens: 1,
  perSlotHour: 3600, // $1 per second
};

function meter() {
  return new AttemptMeter({
    tenant: 'acme',
    prices,
    attempt: 3,
    slotSinceMs: 1_000,
    onBudget: () => Promise.resolve(''),
  });
}

describe('AttemptMeter', () => {
  it('reports the step priced and the attempt’s slot time since it started', () => {
    const report = meter().report(
      { [STEP_USAGE_KEYS.completionTokens]: 1e5, [STEP_USAGE_KEYS.toolCalls]: 2, loss: 1 },
      7,
      11_000,
    );
    expect(report.slot).toEqual({ attempt: 3, seconds: 10, usdPerSecond: 1 });
    expect(report.step?.costUsd.total).toBeCloseTo(1 + 1, 12);
    expect(report.maxUsd).toBe(7);
  });

  it('adds only the slot time not metered before (the counters get increments)', () => {
    const m = meter();
    const first = m.added(m.report({ [STEP_USAGE_KEYS.toolCalls]: 1 }, undefined, 5_000));
    expect(first.usage).toMatchObject({ toolCalls: 1, slotSeconds: 4 });
    expect(first.costUsd).toMatchObject({ toolCalls: 0.5, slotSeconds: 4, total: 4.5 });
    const end = m.added(m.report(null, undefined, 6_500));
    expect(end.usage).toMatchObject({ toolCalls: 0, slotSeconds: 1.5 });
    expect(end.costUsd.total).toBeCloseTo(1.5, 12);
  });
});
