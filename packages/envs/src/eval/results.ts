// The eval run's results from its step records. The eval executor commits one step per
// checkpoint × budget (docs/recipe.md §8.2) under the keys below; this turns a run's steps back
// into per-checkpoint tool-efficiency curves, knees and the cost–accuracy frontier. Shared by
// the control plane (GET /v1/runs/{id}/results) and the CLI, so both report the same numbers.
// The shapes mirror @anneal/protocol's EvalResults schema (envs does not depend on protocol;
// the control plane's response schema checks they agree).
import { costFrontier, curveKnee } from './stats.ts';

/** One checkpoint at one tool-call budget b (protocol `EvalCell`). */
export interface EvalCell {
  budget: number;
  step: number;
  n: number;
  accuracy: number | null;
  accuracyLow: number | null;
  accuracyHigh: number | null;
  meanToolCalls: number | null;
  brokenToolCallRate: number | null;
  abstention: number | null;
  falseAbstention: number | null;
  languageMismatch: number | null;
  preferenceWinRate: number | null;
  promptTokens: number | null;
  completionTokens: number | null;
  costPerQueryUsd: number | null;
}

export interface EvalCheckpointResults {
  index: number;
  label: string;
  cells: EvalCell[];
  bestAccuracy: number | null;
  knee: number | null;
}

export interface EvalFrontierPoint {
  checkpoint: number;
  label: string;
  budget: number;
  costPerQueryUsd: number;
  accuracy: number;
}

/** Step-record keys of one eval cell (the same strings as telemetry's step-metric rows). */
export const EVAL_CELL_KEYS = {
  checkpoint: 'eval/checkpoint',
  budget: 'eval/budget',
  examples: 'examples',
  correct: 'eval/correct',
  accuracy: 'accuracy',
  accuracyLow: 'accuracy/ci_low',
  accuracyHigh: 'accuracy/ci_high',
  toolCalls: 'tool_calls_per_rollout',
  brokenToolCallRate: 'broken_tool_call_rate',
  abstention: 'abstention/unanswerable',
  falseAbstention: 'abstention/false',
  languageMismatch: 'language_mismatch',
  preferenceWinRate: 'preference_win_rate',
  promptTokens: 'prompt_tokens_per_query',
  completionTokens: 'response_tokens',
  costPerQuery: 'cost_per_query_usd',
} as const;

export interface StepLike {
  step: number;
  metrics: Readonly<Record<string, number | null>>;
}

export interface EvalCurves {
  checkpoints: EvalCheckpointResults[];
  frontier: EvalFrontierPoint[];
  /** Every checkpoint × budget cell has a step. */
  complete: boolean;
}

const num = (m: StepLike['metrics'], key: string): number | null => {
  const v = m[key];
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
};

function cellOf(s: StepLike, budget: number): EvalCell {
  const m = s.metrics;
  const K = EVAL_CELL_KEYS;
  return {
    budget,
    step: s.step,
    n: num(m, K.examples) ?? 0,
    accuracy: num(m, K.accuracy),
    accuracyLow: num(m, K.accuracyLow),
    accuracyHigh: num(m, K.accuracyHigh),
    meanToolCalls: num(m, K.toolCalls),
    brokenToolCallRate: num(m, K.brokenToolCallRate),
    abstention: num(m, K.abstention),
    falseAbstention: num(m, K.falseAbstention),
    languageMismatch: num(m, K.languageMismatch),
    preferenceWinRate: num(m, K.preferenceWinRate),
    promptTokens: num(m, K.promptTokens),
    completionTokens: num(m, K.completionTokens),
    costPerQueryUsd: num(m, K.costPerQuery),
  };
}

/**
 * Curves of `labels.length` checkpoints over `budgets` from the steps that carry eval cell keys
 * (steps without them, e.g. of an older single-budget eval, are ignored). A repeated cell keeps
 * its first step (steps are idempotent by number, a resumed eval never rescores a cell).
 */
export function evalCurves(
  labels: readonly string[],
  budgets: readonly number[],
  steps: readonly StepLike[],
): EvalCurves {
  const cells = labels.map(() => new Map<number, EvalCell>());
  for (const s of [...steps].sort((a, b) => a.step - b.step)) {
    const index = num(s.metrics, EVAL_CELL_KEYS.checkpoint);
    const budget = num(s.metrics, EVAL_CELL_KEYS.budget);
    if (index === null || budget === null) continue;
    const byBudget = cells[index];
    if (byBudget === undefined || byBudget.has(budget)) continue;
    byBudget.set(budget, cellOf(s, budget));
  }
  const checkpoints = labels.map((label, index): EvalCheckpointResults => {
    const list = [...cells[index]!.values()].sort((a, b) => a.budget - b.budget);
    const accuracies = list.map((c) => c.accuracy).filter((a): a is number => a !== null);
    return {
      index,
      label,
      cells: list,
      bestAccuracy: accuracies.length === 0 ? null : Math.max(...accuracies),
      knee: curveKnee(list),
    };
  });
  const all = checkpoints.flatMap((c) => c.cells.map((cell) => ({ c, cell })));
  const frontier = costFrontier(
    all.map(({ cell }) => ({ cost: cell.costPerQueryUsd, accuracy: cell.accuracy })),
  ).map((i): EvalFrontierPoint => {
    const { c, cell } = all[i]!;
    return {
      checkpoint: c.index,
      label: c.label,
      budget: cell.budget,
      costPerQueryUsd: cell.costPerQueryUsd!,
      accuracy: cell.accuracy!,
    };
  });
  const complete = cells.every((m) => budgets.every((b) => m.has(b)));
  return { checkpoints, frontier, complete };
}
