// Reward-model training (docs/recipe.md §5): a value-head model (the policy backbone with the LM head
// replaced) trained with the symmetric Bradley–Terry loss on preference pairs. Pairs are shown
// in a seeded random order (chosen first or second) so no position carries the label. For a
// pointwise scorer ℓ_BT(Δ, r) = ℓ_BT(−Δ, 1 − r), so L_sym equals ℓ_BT: the spec has no switch
// to turn symmetry off; the loss is still computed as L_sym. The finished model is exported
// for scoring (saveWeightsForSampler: ONNX for the embedded trainer) and that export is the
// run's final checkpoint, the path a GRPO run's reward model names.
import type { Datum, TrainerModel } from '@anneal/engines';
import type { RmSpec } from '@anneal/protocol';
import { preferenceProbability, symmetricBtLoss } from '@anneal/rl';
import { adamParams } from './common/adam.ts';
import { scoreDatum } from './common/datum.ts';
import { drawMixBatch, stepRng, type WeightedPool } from './common/mix-batch.ts';
import { PhaseTimer } from './common/phase-timer.ts';
import { openTrainerModel, reopenModelAt } from './common/trainer-model.ts';
import { type Epoch, runTrainingLoop } from './common/training-loop.ts';
import type { PreferenceExample } from '../resources/data/catalog.ts';
import { catalogOf, maxContextTokens, mixPools } from '../resources/data/resolve.ts';
import { METRIC, type StepRecordMetrics } from './metrics.ts';
import type { ExecutorContext, ExecutorResult } from './types.ts';
import { trainingUsage } from './usage.ts';

/** Held-out pairs scored per `forward` call. */
const EVAL_CHUNK_PAIRS = 32;

/** One pair as two consecutive datums (x, y_a), (x, y_b); the first carries r (y_a preferred). */
export function pairData(
  pair: PreferenceExample,
  chosenFirst: boolean,
  maxTokens: number,
): Datum[] {
  const [a, b] = chosenFirst ? [pair.chosen, pair.rejected] : [pair.rejected, pair.chosen];
  const r = chosenFirst ? 1 : 0;
  const seq = (response: readonly number[]) => [...pair.prompt, ...response].slice(0, maxTokens);
  return [scoreDatum(seq(a), r), scoreDatum(seq(b), 1 - r)];
}

export interface PairOutcome {
  /** L_sym of the pair (docs/recipe.md §5). */
  loss: number;
  /** Position-agnostic P̄(x, y_preferred, y_other) = σ(Δ̄) (docs/recipe.md §5). */
  preferredProbability: number;
}

/** Loss and P̄ from the two scores of a pair shown as (a, b) with label r. */
export function pairOutcome(scoreA: number, scoreB: number, r: number): PairOutcome {
  const deltaAB = scoreA - scoreB; // Δ(x, y_a, y_b)
  const deltaBA = scoreB - scoreA; // Δ(x, y_b, y_a): a pointwise model swaps the sign
  const probabilityA = preferenceProbability(deltaAB, deltaBA);
  return {
    loss: symmetricBtLoss(deltaAB, deltaBA, r),
    preferredProbability: r === 1 ? probabilityA : 1 - probabilityA,
  };
}

function outcomes(scores: readonly Float32Array[], labels: readonly number[]): PairOutcome[] {
  return labels.map((r, i) => pairOutcome(scores[2 * i]![0]!, scores[2 * i + 1]![0]!, r));
}

/** Share of pairs whose preferred response gets P̄ > 0.5 (ties count as wrong). */
export function pairAccuracy(pairs: readonly PairOutcome[]): number {
  if (pairs.length === 0) return NaN;
  return pairs.filter((p) => p.preferredProbability > 0.5).length / pairs.length;
}

/** Held-out pair accuracy, scored without gradients in chunks. */
export async function heldOutAccuracy(
  model: TrainerModel,
  pairs: readonly PreferenceExample[],
  maxTokens: number,
): Promise<number> {
  const all: PairOutcome[] = [];
  for (let start = 0; start < pairs.length; start += EVAL_CHUNK_PAIRS) {
    const chunk = pairs.slice(start, start + EVAL_CHUNK_PAIRS);
    const data = chunk.flatMap((p) => pairData(p, true, maxTokens));
    const result = await model.forward(data, 'bradley_terry');
    all.push(...outcomes(result.logprobs, new Array<number>(chunk.length).fill(1)));
  }
  return pairAccuracy(all);
}

async function rmStep(
  ctx: ExecutorContext,
  spec: RmSpec,
  model: TrainerModel,
  pools: WeightedPool<PreferenceExample>[],
  step: number,
  epoch: Epoch,
): Promise<StepRecordMetrics> {
  const timer = new PhaseTimer();
  const rng = stepRng(epoch.seed, 'rm', step);
  const drawn = drawMixBatch(pools, spec.batchSize, rng);
  const maxTokens = Math.min(spec.maxSeqLen, maxContextTokens(ctx.resources));
  const labels = drawn.map(() => (rng.next() < 0.5 ? 1 : 0));
  const data = drawn.flatMap((d, i) => pairData(d.item, labels[i] === 1, maxTokens));
  const { result, optim } = await timer.time('train', async () => {
    const result = await model.forwardBackward(data, 'bradley_terry');
    const optim = await model.optimStep(adamParams(spec, epoch.learningRateScale));
    return { result, optim };
  });
  const pairs = outcomes(result.logprobs, labels);
  const inputTokens = data.reduce((sum, d) => sum + d.modelInput.length, 0);
  const trainSeconds = timer.get('train');
  return {
    [METRIC.loss]: pairs.reduce((sum, p) => sum + p.loss, 0) / pairs.length,
    [METRIC.pairAccuracy]: pairAccuracy(pairs),
    [METRIC.gradNorm]: optim.gradNorm,
    [METRIC.trainedTokens]: inputTokens,
    ...trainingUsage(inputTokens),
    [METRIC.tokensPerSecond]: trainSeconds > 0 ? inputTokens / trainSeconds : null,
    [METRIC.learningRate]: spec.optimizer.learningRate * epoch.learningRateScale,
    ...timer.metrics(),
  };
}

export async function runRm(ctx: ExecutorContext<'rm'>): Promise<ExecutorResult> {
  const spec = ctx.spec;
  const catalog = catalogOf(ctx.resources);
  const pools = mixPools(
    catalog,
    spec.data.mix,
    'preferences',
    (s) => catalog.preferences(s).train,
  );
  const heldOut = spec.data.mix.flatMap((m) => catalog.preferences(m.source).heldOut);
  const maxTokens = Math.min(spec.maxSeqLen, maxContextTokens(ctx.resources));
  const opened = await openTrainerModel(ctx, 'value');
  let model = opened.model;
  const evaluate = async (): Promise<StepRecordMetrics> =>
    heldOut.length > 0
      ? { [METRIC.heldOutPairAccuracy]: await heldOutAccuracy(model, heldOut, maxTokens) }
      : {};
  const loop = await runTrainingLoop({
    ctx,
    model,
    doneSteps: opened.doneSteps,
    totalSteps: spec.steps,
    checkpointInterval: spec.checkpointInterval,
    runStep: (step, epoch) => rmStep(ctx, spec, model, pools, step, epoch),
    restore: async (point) => (model = await reopenModelAt(ctx, point, 'value', model)),
    atCheckpoint: evaluate,
  });
  const summary: ExecutorResult['summary'] = {
    steps: loop.lastStep,
    finalLoss: loop.lastMetrics[METRIC.loss] ?? null,
    heldOutPairs: heldOut.length,
    heldOutPairAccuracy:
      loop.lastMetrics[METRIC.heldOutPairAccuracy] ??
      (await evaluate())[METRIC.heldOutPairAccuracy] ??
      null,
    checkpointPath: loop.checkpointPath,
  };
  if (loop.stopped) return { summary, finalCheckpoint: loop.checkpointPath, stopped: true };
  const exported = await model.saveWeightsForSampler(`${ctx.runId}-reward-model`);
  summary['rewardModelPath'] = exported.path;
  return { summary, finalCheckpoint: exported.path, stopped: false };
}
