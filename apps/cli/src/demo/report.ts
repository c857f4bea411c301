// `.anneal/demo/report.json`: every number comes from the runs' stored step records
// (GET /v1/runs/{id}/metrics); nothing is computed from the terminal output or estimated.
// Metric names: apps/worker/src/executors/metrics.ts.
import type { EvalItem, GuardrailAction, GuardrailState, StepRecord } from '@anneal/protocol';
import { STEP_METRICS } from '@anneal/telemetry';
import { recordKey } from '@anneal/protocol';
import { ARMS, type Comparison, compareArms } from './comparison.ts';

export interface EvalNumbers {
  /** Share of eval questions answered correctly (search QA and tool-free together). */
  accuracy: number | null;
  meanToolCalls: number | null;
  /** Mean tool calls on questions answerable without search (lower = more efficient). */
  meanToolCallsToolFree: number | null;
}

export interface DemoReport {
  wallSeconds: number;
  sft: { steps: number; finalLoss: number | null };
  rm: { heldOutPairAccuracy: number | null };
  grpo: {
    steps: number;
    /** rollout.maxPolicyLag of the GRPO run (0: on-policy; docs/recipe.md "Pipelined GRPO"). */
    maxPolicyLag: number;
    rewardFirst5Mean: number | null;
    rewardLast5Mean: number | null;
    /** Max `train_inference_kl` over all steps: with maxPolicyLag ≥ 1 it includes the lag. */
    klMax: number | null;
    /** Max `train_inference_kl_by_lag/fresh`: the train–inference mismatch alone, over the steps
     * that had fresh (lag 0) rollouts; `klFreshSteps` counts them. */
    klFreshMax: number | null;
    klFreshSteps: number;
    gradNormMedian: number | null;
  };
  eval: {
    /** The SFT checkpoint (eval checkpoint 0). */
    before: EvalNumbers;
    /** The same-compute control: SFT continued for GRPO's steps (eval checkpoint 1). */
    control: EvalNumbers;
    /** The GRPO checkpoint (eval checkpoint 2). */
    after: EvalNumbers;
    examples: number | null;
    /** The recipe dimensions of the three checkpoints at the headline budget with paired
     * tests (comparison.ts); absent when the eval's answers were not read. */
    comparison?: Comparison;
    /** The tool-efficiency curves (docs/recipe.md §8.2), when the eval swept budgets. */
    curve?: {
      budget: number;
      before: number | null;
      control: number | null;
      after: number | null;
    }[];
    /** The results chart (GET /v1/runs/{id}/results/curve.svg), saved beside the report. */
    chart?: string;
  };
  /** The demo's training runs run with the default guardrails on (docs/guardrails.md "Defaults"). */
  guardrails: GuardrailSummary;
  runs: { sft: string; rm: string; control: string; grpo: string; eval: string };
}

type TrainingPhase = 'sft' | 'rm' | 'control' | 'grpo';

export interface GuardrailSummary {
  /** Whether any guardrail rule fired on the SFT, RM, control or GRPO run. */
  fired: boolean;
  /** Rollbacks over the training runs. */
  rollbacks: number;
  firings: { run: TrainingPhase; step: number; rule: string; action: GuardrailAction }[];
}

export interface DemoRecords {
  wallSeconds: number;
  runs: DemoReport['runs'];
  sft: readonly StepRecord[];
  rm: readonly StepRecord[];
  grpo: readonly StepRecord[];
  /** Checkpoint 0 is the SFT one, 1 the control, 2 the GRPO one: one step per checkpoint ×
   * budget (keys `eval/checkpoint`, `eval/budget`), or, from a single-budget eval, steps 1–3. */
  eval: readonly StepRecord[];
  /** The eval's answers (GET /v1/runs/{id}/items): the paired comparison's input. */
  evalItems?: readonly EvalItem[];
  /** rollout.maxPolicyLag of the GRPO run (default 0). */
  maxPolicyLag?: number;
  /** The budget the before/after numbers are read at (default: the largest evaluated). */
  evalBudget?: number;
  /** GET /v1/runs/{id} `guardrails` of the training runs (absent: nothing recorded). */
  guardrails?: Partial<Record<TrainingPhase, GuardrailState | undefined>>;
}

const finite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** The metric's values over the steps, in step order (missing and non-finite values dropped). */
export function series(steps: readonly StepRecord[], name: string): number[] {
  return steps.map((s) => s.metrics[name]).filter(finite);
}

export function mean(values: readonly number[]): number | null {
  return values.length === 0 ? null : values.reduce((a, b) => a + b, 0) / values.length;
}

export function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The last step that reports `name` (e.g. held-out accuracy, measured at checkpoints). */
export function lastValue(steps: readonly StepRecord[], name: string): number | null {
  return series(steps, name).at(-1) ?? null;
}

function evalNumbers(step: StepRecord | undefined): EvalNumbers {
  const get = (name: string) => {
    const v = step?.metrics[name];
    return finite(v) ? v : null;
  };
  return {
    accuracy: get('accuracy'),
    meanToolCalls: get('tool_calls_per_rollout'),
    meanToolCallsToolFree: get('tool_calls_per_rollout/tool_free'),
  };
}

/** The k3 KL over the fresh (lag 0) rollouts of a step (packages/telemetry step metrics). */
const KL_FRESH = recordKey(STEP_METRICS.trainInferenceKlByLag, 'fresh');

const CHECKPOINT = 'eval/checkpoint';
const BUDGET = 'eval/budget';

/** The eval step of checkpoint `index` at `budget`; a single-budget eval's step index + 1. */
function evalStep(
  records: readonly StepRecord[],
  index: number,
  budget: number | undefined,
): StepRecord | undefined {
  const cells = records.filter((s) => finite(s.metrics[CHECKPOINT]));
  if (cells.length === 0) return records.find((s) => s.step === index + 1);
  return cells.find((s) => s.metrics[CHECKPOINT] === index && s.metrics[BUDGET] === budget);
}

/** Accuracy per budget of both checkpoints; undefined for a single-budget eval. */
function evalCurve(records: readonly StepRecord[]): DemoReport['eval']['curve'] {
  const budgets = [...new Set(series(records, BUDGET))].sort((a, b) => a - b);
  if (budgets.length === 0) return undefined;
  const at = (index: number, budget: number) => {
    const v = evalStep(records, index, budget)?.metrics['accuracy'];
    return finite(v) ? v : null;
  };
  return budgets.map((budget) => ({
    budget,
    before: at(ARMS.sft, budget),
    control: at(ARMS.control, budget),
    after: at(ARMS.grpo, budget),
  }));
}

export function guardrailSummary(states: DemoRecords['guardrails'] = {}): GuardrailSummary {
  const phases: TrainingPhase[] = ['sft', 'rm', 'control', 'grpo'];
  const firings = phases.flatMap((run) =>
    (states[run]?.firings ?? []).map((f) => ({
      run,
      step: f.step,
      rule: f.rule.name,
      action: f.action,
    })),
  );
  const rollbacks = phases.reduce((sum, run) => sum + (states[run]?.rollbacks ?? 0), 0);
  return { fired: firings.length > 0, rollbacks, firings };
}

export function buildReport(records: DemoRecords): DemoReport {
  const rewards = series(records.grpo, 'reward/all');
  const kls = series(records.grpo, 'train_inference_kl');
  const freshKls = series(records.grpo, KL_FRESH);
  const budget = records.evalBudget ?? Math.max(...series(records.eval, BUDGET));
  const byIndex = (i: number) => evalStep(records.eval, i, budget);
  const examples = byIndex(0)?.metrics['examples'];
  const curve = evalCurve(records.eval);
  return {
    wallSeconds: Math.round(records.wallSeconds * 10) / 10,
    sft: { steps: records.sft.length, finalLoss: lastValue(records.sft, 'loss') },
    rm: { heldOutPairAccuracy: lastValue(records.rm, 'heldout_pair_accuracy') },
    grpo: {
      steps: records.grpo.length,
      maxPolicyLag: records.maxPolicyLag ?? 0,
      rewardFirst5Mean: mean(rewards.slice(0, 5)),
      rewardLast5Mean: mean(rewards.slice(-5)),
      klMax: kls.length === 0 ? null : Math.max(...kls),
      klFreshMax: freshKls.length === 0 ? null : Math.max(...freshKls),
      klFreshSteps: freshKls.length,
      gradNormMedian: median(series(records.grpo, 'grad_norm')),
    },
    eval: {
      before: evalNumbers(byIndex(ARMS.sft)),
      control: evalNumbers(byIndex(ARMS.control)),
      after: evalNumbers(byIndex(ARMS.grpo)),
      examples: finite(examples) ? examples : null,
      ...(records.evalItems && { comparison: compareArms(records.evalItems, budget) }),
      ...(curve && { curve }),
    },
    guardrails: guardrailSummary(records.guardrails),
    runs: records.runs,
  };
}

export interface TargetCheck {
  name: string;
  met: boolean;
  detail: string;
}

const fmt = (v: number | null, digits = 3) => (v === null ? 'n/a' : v.toFixed(digits));

/** The demo's targets (docs/demo.md), checked against the report. */
export function checkTargets(report: DemoReport, grpo: readonly StepRecord[]): TargetCheck[] {
  const { before, after } = report.eval;
  const klEveryStep = grpo.every((s) => finite(s.metrics['train_inference_kl']));
  return [
    {
      name: 'whole demo <= 10 min',
      met: report.wallSeconds <= 600,
      detail: `${report.wallSeconds.toFixed(0)} s`,
    },
    {
      name: 'RM held-out pair accuracy >= 0.8',
      met: (report.rm.heldOutPairAccuracy ?? 0) >= 0.8,
      detail: fmt(report.rm.heldOutPairAccuracy),
    },
    {
      name: 'eval accuracy after >= before + 0.10',
      met:
        before.accuracy !== null &&
        after.accuracy !== null &&
        after.accuracy >= before.accuracy + 0.1 - 1e-9,
      detail: `${fmt(before.accuracy)} -> ${fmt(after.accuracy)}`,
    },
    {
      name: 'fewer tool calls on tool-free questions',
      met:
        before.meanToolCallsToolFree !== null &&
        after.meanToolCallsToolFree !== null &&
        after.meanToolCallsToolFree < before.meanToolCallsToolFree,
      detail: `${fmt(before.meanToolCallsToolFree)} -> ${fmt(after.meanToolCallsToolFree)}`,
    },
    beatsControl(report, 'accuracy'),
    beatsControl(report, 'toolCallsToolFree'),
    klTarget(report, klEveryStep && grpo.length > 0),
  ];
}

/** GRPO against the same-compute control on a recipe dimension: better, with p < 0.05. */
function beatsControl(report: DemoReport, name: 'accuracy' | 'toolCallsToolFree'): TargetCheck {
  const d = report.eval.comparison?.dimensions.find((x) => x.name === name);
  const label =
    name === 'accuracy'
      ? 'GRPO accuracy > control (McNemar p < 0.05)'
      : 'GRPO tool calls on tool-free questions < control (signed-rank p < 0.05)';
  if (!d || d.grpo === null || d.control === null || d.pGrpoVsControl === null) {
    return { name: label, met: false, detail: 'not measured' };
  }
  const better = d.better === 'higher' ? d.grpo > d.control : d.grpo < d.control;
  return {
    name: label,
    met: better && d.pGrpoVsControl < 0.05,
    detail: `control ${fmt(d.control)} -> GRPO ${fmt(d.grpo)}, p = ${d.pGrpoVsControl.toPrecision(2)}`,
  };
}

const sci = (v: number | null) => (v === null ? 'n/a' : v.toExponential(2));

/** On-policy, the step KL is the train–inference mismatch. With maxPolicyLag ≥ 1 it includes
 * the policy lag (docs/recipe.md "Pipelined GRPO"), so the < 1e-2 bound is judged on the
 * fresh-rollout series instead; the step KL must still be recorded and finite every step. */
function klTarget(report: DemoReport, klEveryStep: boolean): TargetCheck {
  const g = report.grpo;
  if (g.maxPolicyLag === 0) {
    return {
      name: 'KL recorded every step, finite, < 1e-2',
      met: klEveryStep && (g.klMax ?? Infinity) < 1e-2,
      detail: `max ${sci(g.klMax)}`,
    };
  }
  return {
    name: 'KL recorded every step, finite; fresh-rollout KL < 1e-2',
    met: klEveryStep && g.klFreshSteps > 0 && (g.klFreshMax ?? Infinity) < 1e-2,
    detail:
      `fresh max ${sci(g.klFreshMax)} over ${g.klFreshSteps} step(s) with fresh rollouts; ` +
      `with lag ${g.maxPolicyLag}: max ${sci(g.klMax)}`,
  };
}
