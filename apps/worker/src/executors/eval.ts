// Evaluation (docs/recipe.md §6, §8): accuracy, mean tool calls (all questions and tool-free ones) and
// mean generated tokens of one or more checkpoints on QA sets, at the spec's tool budget (the
// search_web call limit refuses calls past `budgets.maxToolCalls`), temperature 0.6 by
// default. One step per checkpoint; every checkpoint answers the same questions with the same
// sampling seeds, so checkpoints compare pairwise. Budget sweeps and cost come later.
import type { InferenceEngine } from '@anneal/engines';
import {
  runRollouts,
  verifyAnswer,
  type Rollout,
  type RolloutEnv,
  type SearchWebTool,
} from '@anneal/envs';
import type { EvalSpec } from '@anneal/protocol';
import { chatFormatFor } from './common/chat-format.ts';
import { PhaseTimer } from './common/phase-timer.ts';
import { openModelAt } from './common/trainer-model.ts';
import { checkSource, type EvalExample } from './data/catalog.ts';
import { catalogOf, createSearchTool, maxContextTokens } from './data/resolve.ts';
import { samplingSeed } from './grpo/rollouts.ts';
import { syncWeights } from './grpo/weight-sync.ts';
import { METRIC } from './metrics.ts';
import type { ExecutorContext, ExecutorResult, ResolvedModel } from './types.ts';

export type EvalMetrics = Record<string, number | null>;

const mean = (values: readonly number[]): number | null =>
  values.length === 0 ? null : values.reduce((a, b) => a + b, 0) / values.length;

/** docs/recipe.md §8 numbers of one checkpoint's answers (rollouts[i] answers examples[i]). */
export function evalMetrics(
  examples: readonly EvalExample[],
  rollouts: readonly Rollout[],
): EvalMetrics {
  const rows = examples.map((e, i) => {
    const r = rollouts[i]!;
    return { e, r, correct: verifyAnswer(r.answer, e.key) ? 1 : 0 };
  });
  const search = rows.filter((x) => x.e.needsSearch);
  const toolFree = rows.filter((x) => !x.e.needsSearch);
  return {
    [METRIC.accuracy]: mean(rows.map((x) => x.correct)),
    [METRIC.accuracyNeedsSearch]: mean(search.map((x) => x.correct)),
    [METRIC.accuracyToolFree]: mean(toolFree.map((x) => x.correct)),
    [METRIC.toolCallsPerRollout]: mean(rows.map((x) => x.r.toolCalls)),
    [METRIC.toolCallsNeedsSearch]: mean(search.map((x) => x.r.toolCalls)),
    [METRIC.toolCallsToolFree]: mean(toolFree.map((x) => x.r.toolCalls)),
    [METRIC.toolCallsExecuted]: mean(rows.map((x) => x.r.toolCalls - x.r.refusedCalls)),
    [METRIC.responseTokens]: mean(rows.map((x) => x.r.generatedTokens)),
    [METRIC.answeredFraction]: mean(rows.map((x) => (x.r.answer === null ? 0 : 1))),
    [METRIC.examples]: rows.length,
  };
}

function evalExamples(ctx: ExecutorContext, spec: EvalSpec): EvalExample[] {
  const catalog = catalogOf(ctx.resources);
  return spec.datasets.flatMap((name, i) => {
    checkSource(catalog, 'eval', name, `/datasets/${i}`);
    return catalog.evalSet(name).slice(0, spec.examples);
  });
}

/** Makes `target`'s weights servable under `name`: its sampler export, else via the trainer. */
async function serve(
  ctx: ExecutorContext,
  target: ResolvedModel,
  inference: InferenceEngine,
  name: string,
): Promise<void> {
  if (target.samplerPath !== undefined) {
    await inference.loadWeights({ name, path: target.samplerPath });
    return;
  }
  const model = await openModelAt(ctx, target, 'lm');
  await syncWeights(model, inference, name, name);
}

async function evaluateTarget(
  ctx: ExecutorContext,
  spec: EvalSpec,
  env: Omit<RolloutEnv, 'config'> & { config: RolloutEnv['config'] },
  examples: readonly EvalExample[],
  target: ResolvedModel,
  step: number,
): Promise<EvalMetrics> {
  const timer = new PhaseTimer();
  const name = `${ctx.runId}-eval-${step}`;
  await timer.time('weight_sync', () => serve(ctx, target, env.engine, name));
  const requests = examples.map((e) => ({
    prompt: env.format.encodePrompt(e.question),
    n: 1,
    seed: samplingSeed(spec.seed, `eval:${e.id}`),
  }));
  const groups = await timer.time('rollout', () =>
    runRollouts({ ...env, config: { ...env.config, model: name } }, requests),
  );
  return {
    ...evalMetrics(
      examples,
      groups.map((g) => g[0]!),
    ),
    ...timer.metrics(),
  };
}

function summaryKeys(targets: readonly ResolvedModel[]): string[] {
  const labels = targets.map((t) => t.label);
  return labels.map((l, i) => (labels.indexOf(l) === i ? l : `${l}#${i}`));
}

export async function runEval(ctx: ExecutorContext): Promise<ExecutorResult> {
  const spec = ctx.spec as EvalSpec;
  const { resources } = ctx;
  const targets = resources.evalModels ?? [resources.model];
  const examples = evalExamples(ctx, spec);
  const b = spec.budgets;
  const tool: SearchWebTool = createSearchTool(
    resources,
    {
      resultsPerCall: b.resultsPerCall,
      maxQueryLength: b.maxQueryLength,
      maxCalls: b.maxToolCalls,
    },
    '/budgets',
  );
  const env = {
    engine: resources.inference,
    format: chatFormatFor(resources, tool),
    tool,
    config: {
      maxContextTokens: maxContextTokens(resources),
      maxResponseTokens: b.maxOutputTokens,
      temperature: b.temperature,
      topP: b.topP,
    },
  };
  const keys = summaryKeys(targets);
  const summary: ExecutorResult['summary'] = {
    checkpoints: targets.length,
    examples: examples.length,
  };
  let stopped = false;
  for (let step = (ctx.resumeFrom?.step ?? 0) + 1; step <= targets.length; step++) {
    if (ctx.stopSignal.aborted) {
      stopped = true;
      break;
    }
    const target = targets[step - 1]!;
    const metrics = await evaluateTarget(ctx, spec, env, examples, target, step);
    await ctx.commitStep(step, metrics);
    summary[`${keys[step - 1]}/label`] = target.label;
    for (const [name, value] of Object.entries(metrics)) {
      summary[`${keys[step - 1]}/${name}`] = value;
      if (targets.length === 1) summary[name] = value;
    }
  }
  return { summary, finalCheckpoint: null, stopped };
}
