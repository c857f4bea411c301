// Evaluation with the budget-forced protocol (docs/recipe.md §8): every checkpoint of the spec
// (`models`, default the run model) answers the same questions (same sampling seeds, so
// checkpoints compare pairwise) at every tool-call budget b of `budgets.toolCallBudgets`
// (default 0..10). The prompt states the hard cap b; the search_web tool refuses a call past b
// and the cell counts it as a broken call. One step per checkpoint × budget, in that order,
// holding accuracy with its 95% Wilson interval, tool calls, broken calls, abstention, tokens
// and dollars per query (eval-cell.ts); GET /v1/runs/{id}/results turns the steps into curves,
// knees and the cost–accuracy frontier. Per-item answers go to `eval-items.jsonl` in the run's
// artifact directory (capped), so every number traces to answers.
import { appendFile, mkdir, writeFile } from 'node:fs/promises';
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
import { chatFormatFor } from './common/chat-format.ts';
import { PhaseTimer } from './common/phase-timer.ts';
import { openModelAt } from './common/trainer-model.ts';
import { checkSource, type EvalExample } from './data/catalog.ts';
import { catalogOf, createSearchTool, maxContextTokens } from './data/resolve.ts';
import { cellMetrics, type EvalItem } from './eval-cell.ts';
import { samplingSeed } from './grpo/rollouts.ts';
import { syncWeights } from './grpo/weight-sync.ts';
import type { ExecutorContext, ExecutorResult, ResolvedModel } from './types.ts';

/** Item records kept per run (one line each); beyond it the numbers stay, the lines stop. */
export const MAX_ITEM_RECORDS = 50_000;
export const ITEMS_FILE = 'eval-items.jsonl';

/** What the prompt tells the model about its budget (docs/recipe.md §8.2). */
export function budgetStatement(budget: number): string {
  return budget === 0
    ? 'Tool budget: 0 search_web calls; answer directly.\n'
    : `Tool budget: at most ${budget} search_web call${budget === 1 ? '' : 's'}.\n`;
}

/** `format` whose prompts start with the budget statement. */
export function withBudgetStatement(format: ChatFormat, budget: number): ChatFormat {
  const statement = budgetStatement(budget);
  return Object.assign(Object.create(format) as ChatFormat, {
    encodePrompt: (question: string) => format.encodePrompt(statement + question),
  });
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
  const model = await openModelAt(ctx, target, 'lm');
  await syncWeights(model, inference, name, name);
  return name;
}

function summaryKeys(targets: readonly ResolvedModel[]): string[] {
  const labels = targets.map((t) => t.label);
  return labels.map((l, i) => (labels.indexOf(l) === i ? l : `${l}#${i}`));
}

/** eval-items.jsonl, capped. A fresh attempt starts it over, so a retried eval (whose steps
 * the store keeps once) does not list an answer twice. */
class ItemLog {
  private written = 0;
  constructor(
    private readonly file: string,
    private fresh: boolean,
  ) {}
  async append(items: readonly EvalItem[]): Promise<void> {
    const room = Math.max(0, MAX_ITEM_RECORDS - this.written);
    const kept = items.slice(0, room);
    await mkdir(path.dirname(this.file), { recursive: true });
    const text = kept.map((x) => JSON.stringify(x) + '\n').join('');
    if (this.fresh) await writeFile(this.file, text);
    else if (kept.length > 0) await appendFile(this.file, text);
    this.fresh = false;
    this.written += kept.length;
  }
}

export async function runEval(ctx: ExecutorContext): Promise<ExecutorResult> {
  const spec = ctx.spec as EvalSpec;
  const { resources } = ctx;
  const targets = resources.evalModels ?? [resources.model];
  const examples = evalExamples(ctx, spec);
  const b = spec.budgets;
  const budgets = [...b.toolCallBudgets].sort((x, y) => x - y);
  const envAt = (budget: number): RolloutEnv => {
    const tool = createSearchTool(
      resources,
      { resultsPerCall: b.resultsPerCall, maxQueryLength: b.maxQueryLength, maxCalls: budget },
      '/budgets',
    );
    return {
      engine: resources.inference,
      format: b.statePrompt
        ? withBudgetStatement(chatFormatFor(resources, tool), budget)
        : chatFormatFor(resources, tool),
      tool,
      config: {
        maxContextTokens: maxContextTokens(resources),
        maxResponseTokens: b.maxOutputTokens,
        temperature: b.temperature,
        topP: b.topP,
      },
    };
  };
  const keys = summaryKeys(targets);
  const itemsFile = path.join(ctx.artifactDir, ITEMS_FILE);
  const log = new ItemLog(itemsFile, ctx.resumeFrom === null);
  const summary: ExecutorResult['summary'] = {
    checkpoints: targets.length,
    examples: examples.length,
    budgets: budgets.length,
    itemsPath: itemsFile,
  };
  const accuracy = targets.map(() => new Map<number, number | null>());
  // Reward-model scores of checkpoint 0's answers per budget: the side-by-side baseline.
  const baselineScores = new Map<number, Float32Array>();
  const served = new Map<number, string>();
  let stopped = false;
  const total = targets.length * budgets.length;
  for (let step = (ctx.resumeFrom?.step ?? 0) + 1; step <= total; step++) {
    if (ctx.stopSignal.aborted) {
      stopped = true;
      break;
    }
    const index = Math.floor((step - 1) / budgets.length);
    const budget = budgets[(step - 1) % budgets.length]!;
    const target = targets[index]!;
    const timer = new PhaseTimer();
    if (!served.has(index)) {
      const name = `${ctx.runId}-eval-${index}`;
      served.set(
        index,
        await timer.time('weight_sync', () => serve(ctx, target, resources.inference, name)),
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
    const { metrics, items } = cellMetrics(
      examples,
      rollouts,
      { step, checkpoint: index, budget },
      pricesFor(spec, index),
    );
    await log.append(items);
    const scorer = resources.rewardScorer;
    if (scorer !== undefined && targets.length > 1) {
      const scores = await timer.time('reward', () =>
        scorer.score(
          rollouts.map((r) => ({
            prompt: r.tokens.slice(0, r.promptLength),
            response: r.tokens.slice(r.promptLength),
          })),
        ),
      );
      if (index === 0) baselineScores.set(budget, scores);
      const baseline = baselineScores.get(budget);
      // A resumed eval that already passed checkpoint 0 has no baseline scores: null.
      metrics[EVAL_CELL_KEYS.preferenceWinRate] =
        index === 0 || baseline === undefined ? null : preferenceWinRate(scores, baseline);
    }
    await ctx.commitStep(step, { ...metrics, ...timer.metrics() });
    accuracy[index]!.set(budget, metrics[EVAL_CELL_KEYS.accuracy] ?? null);
    const key = keys[index]!;
    summary[`${key}/label`] = target.label;
    // Headline numbers: at the standard cap when it is swept, else at the largest budget.
    const headline = budgets.includes(b.maxToolCalls) ? b.maxToolCalls : budgets.at(-1);
    if (budget === headline) {
      for (const [name, value] of Object.entries(metrics)) {
        summary[`${key}/${name}`] = value;
        if (targets.length === 1) summary[name] = value;
      }
    }
    const curve = [...accuracy[index]!].map(([at, acc]) => ({ budget: at, accuracy: acc }));
    summary[`${key}/knee`] = curveKnee(curve);
  }
  return { summary, finalCheckpoint: null, stopped };
}
