import { describe, expect, it } from 'vitest';
import type { EvalItem, StepRecord } from '@anneal/protocol';
import { mcnemarP, signedRankExact } from '@anneal/envs';
import { buildReport, checkTargets, lastValue, median, series } from './report.ts';

const at = '2026-01-01T00:00:00.000Z';
const step = (n: number, metrics: Record<string, number | null>): StepRecord => ({
  step: n,
  metrics,
  at,
});
const runs = { sft: 'run_a', rm: 'run_b', control: 'run_e', grpo: 'run_c', eval: 'run_d' };

/** An eval answer of checkpoint `checkpoint` (0 SFT, 1 control, 2 GRPO) to question `q`. */
const item = (
  checkpoint: number,
  q: number,
  correct: boolean,
  toolCalls: number,
  extra: Partial<EvalItem> = {},
): EvalItem => ({
  step: checkpoint + 1,
  checkpoint,
  budget: 5,
  id: `q${q}`,
  needsSearch: q % 2 === 0,
  correct,
  grader: 'verifier',
  answer: 'a',
  abstained: false,
  languageMismatch: false,
  toolCalls,
  searchCalls: toolCalls,
  brokenCalls: 0,
  finish: 'answer',
  promptTokens: 10,
  completionTokens: 20 + toolCalls,
  attempt: 1,
  ...extra,
});

/** 40 questions: SFT and the control right on q < 10, GRPO on q < 30; on the tool-free
 * (odd) questions SFT and the control call the tool twice, GRPO never. */
const items: EvalItem[] = Array.from({ length: 40 }, (_, q) => {
  const calls = q % 2 === 1 ? 2 : 1;
  return [
    item(0, q, q < 10, calls, { reward: 0 }),
    item(1, q, q < 10, calls, { reward: 0.1 * (q % 3) }),
    item(2, q, q < 30, q % 2 === 1 ? 0 : 1, { reward: 0.5 }),
  ];
}).flat();

describe('report helpers', () => {
  it('series drops missing, null and non-finite values, keeping step order', () => {
    const steps = [
      step(1, { x: 1 }),
      step(2, { x: null }),
      step(3, {}),
      step(4, { x: NaN }),
      step(5, { x: 3 }),
    ];
    expect(series(steps, 'x')).toEqual([1, 3]);
  });

  it('median of odd and even counts; null when empty', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNull();
  });

  it('lastValue is the last step that reports the metric (held-out accuracy at checkpoints)', () => {
    const steps = [
      step(1, { h: 0.6 }),
      step(2, { loss: 1 }),
      step(3, { h: 0.9 }),
      step(4, { loss: 0.5 }),
    ];
    expect(lastValue(steps, 'h')).toBe(0.9);
    expect(lastValue(steps, 'missing')).toBeNull();
  });
});

describe('buildReport', () => {
  const grpo = Array.from({ length: 7 }, (_, i) =>
    step(i + 1, { 'reward/all': i, train_inference_kl: i === 3 ? 4e-3 : 1e-4, grad_norm: 10 - i }),
  );
  const report = buildReport({
    wallSeconds: 123.456,
    runs,
    sft: [step(1, { loss: 2 }), step(2, { loss: 1.5 })],
    rm: [step(1, { loss: 0.7 }), step(2, { loss: 0.5, heldout_pair_accuracy: 0.85 })],
    grpo,
    eval: [
      step(1, {
        accuracy: 0.4,
        tool_calls_per_rollout: 1,
        'tool_calls_per_rollout/tool_free': 0.3,
        examples: 300,
      }),
      step(2, {
        accuracy: 0.5,
        tool_calls_per_rollout: 0.9,
        'tool_calls_per_rollout/tool_free': 0.2,
        examples: 300,
      }),
      step(3, {
        accuracy: 0.55,
        tool_calls_per_rollout: 0.8,
        'tool_calls_per_rollout/tool_free': 0.05,
        examples: 300,
      }),
    ],
  });

  it('takes every number from the step records', () => {
    expect(report).toEqual({
      wallSeconds: 123.5,
      sft: { steps: 2, finalLoss: 1.5 },
      rm: { heldOutPairAccuracy: 0.85 },
      grpo: {
        steps: 7,
        maxPolicyLag: 0,
        rewardFirst5Mean: 2, // (0+1+2+3+4)/5
        rewardLast5Mean: 4, // (2+3+4+5+6)/5
        klMax: 4e-3,
        klFreshMax: null, // these records carry no by-lag series
        klFreshSteps: 0,
        gradNormMedian: 7, // median of 10..4
      },
      eval: {
        before: { accuracy: 0.4, meanToolCalls: 1, meanToolCallsToolFree: 0.3 },
        control: { accuracy: 0.5, meanToolCalls: 0.9, meanToolCallsToolFree: 0.2 },
        after: { accuracy: 0.55, meanToolCalls: 0.8, meanToolCallsToolFree: 0.05 },
        examples: 300,
      },
      guardrails: { fired: false, rollbacks: 0, firings: [] },
      runs,
    });
  });

  it('checks the targets against the report', () => {
    const checks = checkTargets(report, grpo);
    expect(checks.map((c) => [c.name, c.met])).toEqual([
      ['whole demo <= 10 min', true],
      ['RM held-out pair accuracy >= 0.8', true],
      ['eval accuracy after >= before + 0.10', true],
      ['fewer tool calls on tool-free questions', true],
      ['GRPO accuracy > control (McNemar p < 0.05)', false], // no answers read: not measured
      ['GRPO tool calls on tool-free questions < control (signed-rank p < 0.05)', false],
      ['KL recorded every step, finite, < 1e-2', true],
    ]);
    const missingKl = [...grpo.slice(0, 3), step(4, { 'reward/all': 1 })];
    const slow = {
      ...report,
      wallSeconds: 601,
      eval: { ...report.eval, after: { ...report.eval.after, accuracy: 0.49 } },
    };
    expect(
      checkTargets(slow, missingKl)
        .filter((c) => !c.met)
        .map((c) => c.name),
    ).toEqual([
      'whole demo <= 10 min',
      'eval accuracy after >= before + 0.10',
      'GRPO accuracy > control (McNemar p < 0.05)',
      'GRPO tool calls on tool-free questions < control (signed-rank p < 0.05)',
      'KL recorded every step, finite, < 1e-2',
    ]);
  });

  it('states each recipe dimension for SFT, control and GRPO with paired p-values', () => {
    const r = buildReport({
      wallSeconds: 1,
      runs,
      sft: [],
      rm: [],
      grpo: [],
      eval: [],
      evalItems: items,
      evalBudget: 5,
    });
    const c = r.eval.comparison!;
    expect(c).toMatchObject({ budget: 5, questions: 40 });
    const dim = (name: string) => c.dimensions.find((d) => d.name === name)!;
    expect(c.dimensions.map((d) => d.name)).toEqual([
      'accuracy',
      'toolCalls',
      'toolCallsToolFree',
      'failedCalls',
      'length',
      'preference',
    ]);
    // 20 questions only GRPO got right, none the other way: exact McNemar 2·0.5^20.
    expect(dim('accuracy')).toMatchObject({
      test: 'mcnemar-exact',
      questions: 40,
      sft: 0.25,
      control: 0.25,
      grpo: 0.75,
    });
    expect(dim('accuracy').pGrpoVsControl).toBeCloseTo(mcnemarP(0, 20), 15);
    expect(dim('accuracy').pGrpoVsControl).toBeLessThan(0.05);
    // Tool-free questions only (the 20 odd ones): 2 calls -> 0 on each.
    expect(dim('toolCallsToolFree')).toMatchObject({
      test: 'wilcoxon-signed-rank-exact',
      questions: 20,
      control: 2,
      grpo: 0,
    });
    const toolFree = signedRankExact(new Array(20).fill(2), new Array(20).fill(0)).p;
    expect(dim('toolCallsToolFree').pGrpoVsControl).toBeCloseTo(toolFree, 15);
    expect(dim('failedCalls')).toMatchObject({ sft: 0, grpo: 0, pGrpoVsControl: 1 });
    expect(dim('preference').grpo).toBe(0.5);
    for (const d of c.dimensions) {
      for (const p of [d.pGrpoVsControl, d.pGrpoVsSft]) {
        expect(p).not.toBeNull();
        expect(p!).toBeGreaterThanOrEqual(0);
        expect(p!).toBeLessThanOrEqual(1);
      }
    }
    const targets = checkTargets(r, []);
    expect(targets.find((t) => t.name.startsWith('GRPO accuracy'))).toMatchObject({ met: true });
    expect(targets.find((t) => t.name.startsWith('GRPO tool calls'))).toMatchObject({ met: true });
    // Without reward scores the preference dimension is not measured: null, never made up.
    const unscored = buildReport({
      wallSeconds: 1,
      runs,
      sft: [],
      rm: [],
      grpo: [],
      eval: [],
      evalItems: items.map(({ reward: _r, ...rest }) => rest),
      evalBudget: 5,
    });
    expect(unscored.eval.comparison!.dimensions.find((d) => d.name === 'preference')).toMatchObject(
      { questions: 0, grpo: null, pGrpoVsControl: null },
    );
  });

  it('reports null, not a made-up number, when a metric was never recorded', () => {
    const empty = buildReport({ wallSeconds: 1, runs, sft: [], rm: [], grpo: [], eval: [] });
    expect(empty.sft).toEqual({ steps: 0, finalLoss: null });
    expect(empty.grpo.klMax).toBeNull();
    expect(empty.eval.before.accuracy).toBeNull();
    expect(checkTargets(empty, []).find((c) => c.name.startsWith('KL'))?.met).toBe(false);
  });

  it('reads a budget sweep: before/after at the headline budget, and the curve', () => {
    const cell = (n: number, checkpoint: number, budget: number, accuracy: number) =>
      step(n, {
        'eval/checkpoint': checkpoint,
        'eval/budget': budget,
        accuracy,
        tool_calls_per_rollout: budget / 2,
        examples: 8,
      });
    const sweep = buildReport({
      wallSeconds: 1,
      runs,
      sft: [],
      rm: [],
      grpo: [],
      eval: [
        cell(1, 0, 0, 0.1),
        cell(2, 0, 5, 0.3),
        cell(3, 1, 0, 0.15),
        cell(4, 1, 5, 0.4),
        cell(5, 2, 0, 0.2),
        cell(6, 2, 5, 0.6),
      ],
      evalBudget: 5,
    });
    expect(sweep.eval.before).toMatchObject({ accuracy: 0.3, meanToolCalls: 2.5 });
    expect(sweep.eval.control).toMatchObject({ accuracy: 0.4 });
    expect(sweep.eval.after).toMatchObject({ accuracy: 0.6 });
    expect(sweep.eval.examples).toBe(8);
    expect(sweep.eval.curve).toEqual([
      { budget: 0, before: 0.1, control: 0.15, after: 0.2 },
      { budget: 5, before: 0.3, control: 0.4, after: 0.6 },
    ]);
  });

  it('with maxPolicyLag >= 1 judges the KL bound on the fresh-rollout series', () => {
    // Lag 1: step 1 is fresh (lag 0), later steps trained rollouts of the previous version, so
    // their step KL includes the lag (docs/recipe.md "Pipelined GRPO").
    const lagged = (n: number, kl: number, fresh: number | null) =>
      step(n, {
        'reward/all': 0.1 * n,
        train_inference_kl: kl,
        'train_inference_kl_by_lag/fresh': fresh,
        'train_inference_kl_by_lag/lagged': fresh === null ? kl : null,
      });
    const steps = [lagged(1, 1e-12, 1e-12), lagged(2, 3e-2, null), lagged(3, 2e-2, null)];
    const r = buildReport({
      wallSeconds: 1,
      runs,
      sft: [],
      rm: [],
      grpo: steps,
      eval: [],
      maxPolicyLag: 1,
    });
    expect(r.grpo).toMatchObject({
      maxPolicyLag: 1,
      klMax: 3e-2,
      klFreshMax: 1e-12,
      klFreshSteps: 1,
    });
    const kl = (report: typeof r, grpo: StepRecord[]) =>
      checkTargets(report, grpo).find((c) => c.name.startsWith('KL'))!;
    expect(kl(r, steps)).toMatchObject({
      name: 'KL recorded every step, finite; fresh-rollout KL < 1e-2',
      met: true,
    });
    expect(kl(r, steps).detail).toContain('fresh max 1.00e-12 over 1 step(s)');
    // The same records judged as an on-policy run fail the bound: the lag is in the step KL.
    expect(kl({ ...r, grpo: { ...r.grpo, maxPolicyLag: 0 } }, steps).met).toBe(false);
    // A fresh mismatch above the bound fails; so do no fresh steps, or a step without its KL.
    const bad = [lagged(1, 2e-2, 2e-2), ...steps.slice(1)];
    const badReport = buildReport({
      wallSeconds: 1,
      runs,
      sft: [],
      rm: [],
      grpo: bad,
      eval: [],
      maxPolicyLag: 1,
    });
    expect(kl(badReport, bad).met).toBe(false);
    expect(kl({ ...r, grpo: { ...r.grpo, klFreshMax: null, klFreshSteps: 0 } }, steps).met).toBe(
      false,
    );
    expect(kl(r, [...steps, step(4, { 'reward/all': 1 })]).met).toBe(false);
  });
});

describe('guardrails in the report', () => {
  const rule = {
    name: 'nonfinite-loss',
    metric: 'loss',
    when: 'nonFinite' as const,
    forSteps: 1,
    action: 'rollback' as const,
    origin: 'operator' as const,
  };
  const records = {
    wallSeconds: 1,
    runs,
    sft: [],
    rm: [],
    grpo: [],
    eval: [],
  };

  it('says none fired when the runs record no firing', () => {
    const report = buildReport({
      ...records,
      guardrails: {
        sft: { rollbacks: 0, learningRateScale: 1, firings: [] },
        grpo: undefined,
      },
    });
    expect(report.guardrails).toEqual({ fired: false, rollbacks: 0, firings: [] });
  });

  it('lists each firing with its run, step, rule and action, and counts the rollbacks', () => {
    const firing = {
      step: 8,
      rule,
      values: [{ step: 8, value: 'NaN' as const }],
      action: 'rollback' as const,
      reason: 'r',
      at,
      restored: { step: 6, path: 'p' },
      rollbacks: 1,
    };
    const report = buildReport({
      ...records,
      guardrails: { grpo: { rollbacks: 1, learningRateScale: 1, firings: [firing] } },
    });
    expect(report.guardrails).toEqual({
      fired: true,
      rollbacks: 1,
      firings: [{ run: 'grpo', step: 8, rule: 'nonfinite-loss', action: 'rollback' }],
    });
  });
});
