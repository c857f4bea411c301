import { describe, expect, it } from 'vitest';
import { validateRunSpec } from './run-spec/index.ts';
import { estimateRun } from './usage-estimate.ts';
import { FREE, NO_USAGE, STEP_USAGE_KEYS, priceUsage, stepUsage, usagePeriods } from './usage.ts';

const prices = {
  promptPerMillionTokens: 2,
  completionPerMillionTokens: 8,
  trainedPerMillionTokens: 4,
  perToolCall: 0.01,
  perJudgeCall: 0.002,
  scoredPerMillionTokens: 0.5,
  perSlotHour: 3.6,
};

function spec(value: unknown) {
  const parsed = validateRunSpec(value);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value;
}

describe('usage prices', () => {
  it('prices each item and adds them up', () => {
    const cost = priceUsage(
      {
        promptTokens: 1e6,
        completionTokens: 5e5,
        trainedTokens: 2e6,
        toolCalls: 3,
        judgeCalls: 10,
        scoredTokens: 4e6,
        slotSeconds: 7200,
      },
      prices,
    );
    expect(cost).toEqual({
      promptTokens: 2,
      completionTokens: 4,
      trainedTokens: 8,
      toolCalls: 0.03,
      judgeCalls: 0.02,
      scoredTokens: 2,
      slotSeconds: 7.2,
      total: 2 + 4 + 8 + 0.03 + 0.02 + 2 + 7.2,
    });
    expect(priceUsage({ ...NO_USAGE, trainedTokens: 1e9 }, FREE).total).toBe(0);
  });

  it('reads a step record’s usage keys; missing, null or negative count 0', () => {
    expect(
      stepUsage({
        [STEP_USAGE_KEYS.promptTokens]: 10,
        [STEP_USAGE_KEYS.completionTokens]: null,
        [STEP_USAGE_KEYS.toolCalls]: -1,
        [STEP_USAGE_KEYS.judgeCalls]: 2,
        [STEP_USAGE_KEYS.scoredTokens]: 30,
        loss: 3,
      }),
    ).toEqual({ ...NO_USAGE, promptTokens: 10, judgeCalls: 2, scoredTokens: 30 });
  });

  it('names the UTC day and month', () => {
    expect(usagePeriods(new Date('2026-12-31T23:59:59.999Z'))).toEqual({
      day: '2026-12-31',
      month: '2026-12',
    });
  });
});

describe('estimateRun', () => {
  it('bounds a GRPO step by its rollouts, tokens and tool calls', () => {
    const grpo = spec({
      kind: 'grpo',
      steps: 10,
      rollout: { groupSize: 4, promptsPerStep: 2, maxTokens: 100 },
      tools: { maxCallsPerRollout: 3 },
      budget: { maxUsd: 1 },
    });
    const estimate = estimateRun(grpo, prices, { promptTokens: 50, stepSeconds: 36 });
    // 2 policy + 2 reference groups of 4 rollouts: each group's first request sends the prompt
    // once (n = 4), each of the 16 rollouts' 3 tool calls re-sends it; at most one judge request
    // per policy rollout, the reward model scoring all 16 (prompt + generated tokens).
    expect(estimate.perStep).toEqual([
      {
        step: 1,
        usage: {
          promptTokens: (4 + 16 * 3) * 50,
          completionTokens: 16 * 100,
          trainedTokens: 8 * 100,
          toolCalls: 16 * 3,
          judgeCalls: 8,
          scoredTokens: 16 * (50 + 100),
          slotSeconds: 36,
        },
        costUsd: priceUsage(
          {
            promptTokens: 2600,
            completionTokens: 1600,
            trainedTokens: 800,
            toolCalls: 48,
            judgeCalls: 8,
            scoredTokens: 2400,
            slotSeconds: 36,
          },
          prices,
        ),
      },
    ]);
    expect(estimate.steps).toBe(10);
    expect(estimate.total.costUsd.total).toBeCloseTo(10 * estimate.perStep[0]!.costUsd.total, 12);
    expect(estimate.budget).toEqual({ maxUsd: 1, fits: estimate.total.costUsd.total <= 1 });
    // the tool results inside scored responses are not bounded by the spec
    expect(estimate.notEstimated).toEqual([
      'scored tokens: tool results inside a scored response (the spec does not bound their length)',
    ]);
    const toolFree = spec({ kind: 'grpo', tools: { maxCallsPerRollout: 0 } });
    expect(
      estimateRun(toolFree, prices, { promptTokens: 50, stepSeconds: 1 }).notEstimated,
    ).toEqual([]);
  });

  it('adds the mismatch probe of a lagged run: its rollouts one request each, at most the batch', () => {
    const lagged = (promptsPerStep: number) =>
      estimateRun(
        spec({
          kind: 'grpo',
          rollout: { groupSize: 4, promptsPerStep, maxTokens: 100, maxPolicyLag: 1 },
          tools: { maxCallsPerRollout: 3 },
        }),
        prices,
        { promptTokens: 50 },
      ).perStep[0]!.usage;
    // 8 policy rollouts: the probe is all 8 (at least 32, at most the batch)
    expect(lagged(2)).toMatchObject({
      promptTokens: (4 + 16 * 3 + 8 * (1 + 3)) * 50,
      completionTokens: (16 + 8) * 100,
      toolCalls: (16 + 8) * 3,
    });
    // 512 policy rollouts: 1/8 of them (+ 1 for the rounding of its token budget)
    expect(lagged(128).completionTokens).toBe((1024 + 65) * 100);
  });

  it('lists an eval cell per budget, repeated per checkpoint, and says what it leaves out', () => {
    const evalSpec = spec({
      kind: 'eval',
      examples: 10,
      budgets: { toolCallBudgets: [0, 2], maxOutputTokens: 20 },
      models: [{ base: 'a' }, { base: 'b' }],
    });
    const estimate = estimateRun(evalSpec, prices);
    expect(estimate.steps).toBe(4);
    expect(estimate.perStep.map((s) => s.usage.toolCalls)).toEqual([0, 20]);
    // two models compared: the reward model scores every answer; the verifier grades (no judge)
    expect(estimate.perStep.map((s) => s.usage.scoredTokens)).toEqual([200, 200]);
    expect(estimate.total.usage.judgeCalls).toBe(0);
    const judged = spec({ kind: 'eval', examples: 10, judge: 'llm' });
    expect(estimateRun(judged, prices).perStep[0]!.usage).toMatchObject({
      judgeCalls: 10,
      scoredTokens: 0,
    });
    expect(estimate.total.usage.completionTokens).toBe(2 * 2 * 10 * 20);
    expect(estimate.notEstimated).toHaveLength(3);
    expect(estimate.budget).toBeNull();
  });
});
