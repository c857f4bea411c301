// Evaluation with the budget-forced protocol (docs/recipe.md §8): every checkpoint of the spec
// (`models`, default the run model) answers the same questions (same sampling seeds, so
// checkpoints compare pairwise) at every tool-call budget b of `budgets.toolCallBudgets`
// (default 0..10). The prompt states the hard cap b; the search_web tool refuses a call past b
// and the cell counts it as a broken call. One step per checkpoint × budget, in that order,
// holding accuracy with its 95% Wilson interval, tool calls, broken calls, abstention, tokens
// and dollars per query (eval-cell.ts); GET /v1/runs/{id}/results turns the steps into curves,
// knees and the cost–accuracy frontier. Per-item answers go to `eval-items.jsonl` in the run's
// artifact directory (capped), so every number traces to answers. A retried eval resumes after
// its committed cells (docs/evaluation.md "Resuming a killed eval").
import path from 'node:path';
import type { InferenceEngine } from '@anneal/engines';
import {
  EVAL_CELL_KEYS,
  curveKnee,
  preferenceWinRate,
  pricesFor,
  runRollouts,
  type ChatFormat,
  type Rollout,
  type RolloutEnv,
} from '@anneal/envs';
import type { EvalSpec } from '@anneal/protocol';
import { RunSetupError } from '../../errors.ts';
import { chatFormatFor } from '../common/chat-format.ts';
import { PhaseTimer } from '../common/phase-timer.ts';
import { openModelAt } from '../common/trainer-model.ts';
import { checkSource, type EvalExample } from '../../resources/data/catalog.ts';
import { catalogOf, createSearchTool, maxContextTokens } from '../../resources/data/resolve.ts';
import { cellMetrics, type EvalItem } from './cell.ts';
import { gradeAnswers } from './grade.ts';
import { ITEMS_FILE, ItemLog } from './items.ts';
import { samplingSeed } from '../common/sampling-seed.ts';
import { syncWeights } from '../common/weight-sync.ts';
import { phaseKey, type StepPhase } from '../metrics.ts';
import type { ExecutorContext, ExecutorResult, ResolvedModel } from '../types.ts';
import { samplingUsage } from '../usage.ts';
import { ScoringMeter } from '../scoring-meter.ts';

export { ITEMS_FILE, MAX_ITEM_RECORDS } from './items.ts';

/** What the prompt tells the model about its budget (docs/recipe.md §8.2). */
export function budgetStatement(budget: number): string {
  return budget === 0
    ? 'Tool budget: 0 search_web calls; answer directly.'
    : `Tool budget: at most ${budget} search_web call${budget === 1 ? '' : 's'}.`;
}

/** `format` whose prompts start with the budget statement, on a line of its own. */
export function withBudgetStatement(format: ChatFormat, budget: number): ChatFormat {
  const statement = `${budgetStatement(budget)}\n`;
  return Object.assign(Object.create(format) as ChatFormat, {
    encodePrompt: (question: string) => format.encodePrompt(statement + question),
  });
}

/** The prompt format at budget b: a chat template renders the statement as its system message;
 * the marker format (no system role) starts the user turn with it (docs/evaluation.md
 * "The budget-forced protocol"). */
export function budgetFormat(format: ChatFormat, budget: number): ChatFormat {
  return format.withSystemPrompt === undefined
    ? withBudgetStatement(format, budget)
    : format.withSystemPrompt(budgetStatement(budget));
}

function evalExamples(ctx: ExecutorContext, spec: EvalSpec): EvalExample[] {
  const catalog = catalogOf(ctx.resources);
  return spec.datasets.flatMap((name, i) => {
    checkSource(catalog, 'eval', name, `/datasets/${i}`);
    return catalog.evalSet(name).slice(0, spec.examples);
  });
}

/** Makes `target`'s weights servable under `name`: its sampler export, else exported through
 * the trainer (a base model too: the submission check requires a trainer endpoint for it). */
async function serve(
  ctx: ExecutorContext,
  target: ResolvedModel,
  inference: InferenceEngine,
  name: string,
): Promise<string> {
  if (target.samplerPath !== undefined) {
    await inference.loadWeights({ name, path: target.samplerPath });
    return name;
  }
  const model = await openModelAt(ctx, target, 'lm', { optimizer: false }); // exported only
  await syncWeights(model, inference, name, name);
  return name;
}

function summaryKeys(targets: readonly ResolvedModel[]): string[] {
  const labels = targets.map((t) => t.label);
  return labels.map((l, i) => (labels.indexOf(l) === i ? l : `${l}#${i}`));
}

/** Phases of a cell; their timings are in the step record, not in the run summary. */
const PHASES: readonly StepPhase[] = ['weight_sync', 'rollout', 'reward'];
const PHASE_KEYS = new Set<string>(PHASES.map((p) => phaseKey(p)));

/** Checkpoint 0's reward-model scores at each budget, from the kept item lines of a resumed
 * eval: complete cells only (a cell past the item cap has none). */
function baselineFromItems(kept: readonly EvalItem[], examples: number): Map<number, Float32Array> {
  const byBudget = new Map<number, number[]>();
  for (const item of kept) {
    if (item.checkpoint !== 0 || item.reward === undefined) continue;
    const scores = byBudget.get(item.budget) ?? [];
    scores.push(item.reward);
    byBudget.set(item.budget, scores);
  }
  return new Map(
    [...byBudget]
      .filter(([, scores]) => scores.length === examples)
      .map(([budget, scores]) => [budget, Float32Array.from(scores)]),
  );
}

export async function runEval(ctx: ExecutorContext<'eval'>): Promise<ExecutorResult> {
  const spec = ctx.spec;
  const { resources } = ctx;
  if (spec.judge === 'llm' && resources.judge === undefined) {
    throw new RunSetupError(
      'judge: llm needs a judge endpoint and this run has none (set endpoints.judge or defaults.judge)',
    );
  }
  const judge = spec.judge === 'llm' ? resources.judge : undefined;
  const targets = resources.evalModels ?? [resources.model];
  const examples = evalExamples(ctx, spec);
  const b = spec.budgets;
  const budgets = [...b.toolCallBudgets].sort((x, y) => x - y);
  const envAt = (budget: number): RolloutEnv => {
    const tool = createSearchTool(
      resources,
      {
        resultsPerCall: b.resultsPerCall,
        maxQueryLength: b.maxQueryLength,
        maxCallsPerRollout: budget,
      },
      '/budgets',
    );
    const format = chatFormatFor(resources, tool);
    return {
      engine: resources.inference,
      format: b.statePrompt ? budgetFormat(format, budget) : format,
      tool,
      config: {
        maxContextTokens: maxContextTokens(resources),
        maxResponseTokens: b.maxOutputTokens,
        temperature: b.temperature,
        topP: b.topP,
        // answers are graded, never trained on: no sampling logprobs (most of a vLLM reply)
        logprobs: false,
      },
    };
  };
  const keys = summaryKeys(targets);
  const total = targets.length * budgets.length;
  const cellAt = (step: number) => ({
    index: Math.floor((step - 1) / budgets.length),
    budget: budgets[(step - 1) % budgets.length]!,
  });
  // Cells an earlier attempt committed are kept, not answered again; their item lines stay.
  const committed = new Map(
    (await ctx.committedSteps())
      .filter((r) => r.step >= 1 && r.step <= total)
      .map((r) => [r.step, r.metrics]),
  );
  const itemsFile = path.join(ctx.artifactDir, ITEMS_FILE);
  const { log, kept } = await ItemLog.open(itemsFile, new Set(committed.keys()));
  const summary: ExecutorResult['summary'] = {
    checkpoints: targets.length,
    examples: examples.length,
    budgets: budgets.length,
    itemsPath: itemsFile,
  };
  const accuracy = targets.map(() => new Map<number, number | null>());
  // Reward-model scores of checkpoint 0's answers per budget: the side-by-side baseline.
  const baselineScores = baselineFromItems(kept, examples.length);
  const served = new Map<number, string>();

  /** One cell answered, graded, logged and committed; returns its step record. */
  const runCell = async (step: number): Promise<Record<string, number | null>> => {
    const { index, budget } = cellAt(step);
    const timer = new PhaseTimer();
    if (!served.has(index)) {
      const name = `${ctx.runId}-eval-${index}`;
      served.set(
        index,
        await timer.time('weight_sync', () =>
          serve(ctx, targets[index]!, resources.inference, name),
        ),
      );
    }
    const model = served.get(index)!;
    const env = envAt(budget);
    const requests = examples.map((e) => ({
      prompt: env.format.encodePrompt(e.question),
      n: 1,
      seed: samplingSeed(spec.seed, `eval:${e.id}`),
    }));
    const groups = await timer.time('rollout', () =>
      runRollouts({ ...env, config: { ...env.config, model } }, requests),
    );
    const rollouts: Rollout[] = groups.map((g) => g[0]!);
    // What this cell sends the judge and the reward model, metered with its step.
    const scoring = new ScoringMeter();
    const grades = await timer.time('reward', () =>
      gradeAnswers(examples, rollouts, scoring.judge(judge)),
    );
    const { metrics, items } = cellMetrics(
      examples,
      rollouts,
      { step, checkpoint: index, budget, attempt: ctx.attempt },
      pricesFor(spec, index),
      grades,
    );
    const scorer = scoring.scorer(resources.rewardScorer);
    if (scorer !== undefined && targets.length > 1) {
      const scores = await timer.time('reward', () =>
        scorer.score(
          rollouts.map((r) => ({
            prompt: r.tokens.slice(0, r.promptLength),
            response: r.tokens.slice(r.promptLength),
          })),
        ),
      );
      items.forEach((item, i) => (item.reward = scores[i]));
      if (index === 0) baselineScores.set(budget, scores);
      const baseline = baselineScores.get(budget);
      // null at checkpoint 0, and where checkpoint 0's lines were past the item cap (resumed).
      metrics[EVAL_CELL_KEYS.preferenceWinRate] =
        index === 0 || baseline === undefined ? null : preferenceWinRate(scores, baseline);
    }
    await log.append(items);
    const record = {
      ...metrics,
      ...samplingUsage(rollouts.map((r) => [r])),
      ...scoring.metrics(),
      ...timer.metrics(),
    };
    await ctx.commitStep(step, record);
    return record;
  };

  // Headline numbers: at the standard cap when it is swept, else at the largest budget.
  const headline = budgets.includes(b.maxToolCalls) ? b.maxToolCalls : budgets.at(-1);
  let stopped = false;
  for (let step = 1; step <= total; step++) {
    let record = committed.get(step);
    if (record === undefined) {
      if (ctx.stopSignal.aborted) {
        stopped = true;
        break;
      }
      record = await runCell(step);
    }
    const { index, budget } = cellAt(step);
    accuracy[index]!.set(budget, record[EVAL_CELL_KEYS.accuracy] ?? null);
    const key = keys[index]!;
    summary[`${key}/label`] = targets[index]!.label;
    if (budget === headline) {
      for (const [name, value] of Object.entries(record)) {
        if (PHASE_KEYS.has(name)) continue;
        summary[`${key}/${name}`] = value;
        if (targets.length === 1) summary[name] = value;
      }
    }
    const curve = [...accuracy[index]!].map(([at, acc]) => ({ budget: at, accuracy: acc }));
    summary[`${key}/knee`] = curveKnee(curve);
  }
  return { summary, finalCheckpoint: null, stopped };
}
