// SFT warm-up (docs/recipe.md §1.1): token cross-entropy on completion tokens only — prompt and
// tool-output tokens carry weight 0. On a summing trainer the optimised loss is the mean over the
// batch's completion tokens; a per-sequence trainer (SkyRL JAX) cannot weigh sequences, so there
// it is the mean of per-sequence means and the run says so (docs/engines.md "Reduction").
import type { Datum, LossReduction, TrainerModel } from '@anneal/engines';
import type { SftSpec } from '@anneal/protocol';
import { adamParams } from './common/adam.ts';
import { shiftedDatum } from './common/datum.ts';
import { drawMixBatch, stepRng, type WeightedPool } from './common/mix-batch.ts';
import { PhaseTimer } from './common/phase-timer.ts';
import { openTrainerModel, reopenModelAt } from './common/trainer-model.ts';
import { type Epoch, runTrainingLoop } from './common/training-loop.ts';
import type { SftExample } from '../resources/data/catalog.ts';
import { catalogOf, maxContextTokens, mixPools } from '../resources/data/resolve.ts';
import { METRIC, type StepRecordMetrics } from './metrics.ts';
import type { ExecutorContext, ExecutorResult } from './types.ts';
import { trainingUsage } from './usage.ts';

export interface SftBatch {
  data: Datum[];
  /** Completion-token mask per datum, aligned with its target tokens. */
  masks: Float32Array[];
  /** Σ of the masks: completion tokens the loss covers. */
  trainedTokens: number;
  /** Σ model_input lengths: tokens the trainer runs forward and backward over. */
  inputTokens: number;
}

/** Per-token weight on the completion targets of a batch with `total` of them. 'sum': L = Σ w·(−logp),
 * so w = 1/total makes L the mean cross-entropy over the batch's completion tokens.
 * 'mean_per_sequence' (SkyRL JAX): each datum's loss is divided by the sum of its own weights
 * (skyrl/backends/jax.py loss_for_lora), so any per-datum scale cancels; the mask is sent as it
 * is and L is the mean over sequences of each sequence's mean cross-entropy (sftObjectiveNotice). */
export function crossEntropyWeight(reduction: LossReduction, total: number): number {
  if (total === 0) return 0;
  return reduction === 'sum' ? 1 / total : 1;
}

/** The run:notice of an SFT run on a trainer that averages per sequence: its objective weighs
 * every sequence alike, not every completion token (docs/engines.md "Reduction"). */
export function sftObjectiveNotice(
  reduction: LossReduction,
  endpoint = 'the trainer endpoint',
): string | undefined {
  if (reduction === 'sum') return undefined;
  return (
    `${endpoint} reduces token losses per sequence (mean_per_sequence: each datum divided by the ` +
    'sum of its weights), so this SFT run minimises the mean over sequences of each sequence’s ' +
    'mean completion-token cross-entropy, not the mean over all completion tokens: short ' +
    'completions weigh as much as long ones; the loss metric is still the token mean (docs/engines.md "Reduction")'
  );
}

/** Datums of one SFT batch; sequences are cut to `maxTokens` (the tail is dropped). */
export function sftBatch(
  examples: readonly SftExample[],
  maxTokens: number,
  reduction: LossReduction,
): SftBatch {
  const cut = examples.map((e) => ({
    tokens: e.tokens.slice(0, maxTokens),
    mask: e.lossMask.slice(0, maxTokens),
  }));
  const trainedOf = (mask: readonly number[]) => mask.slice(1).reduce((a, m) => a + m, 0);
  const trainedTokens = cut.reduce((sum, e) => sum + trainedOf(e.mask), 0);
  const data: Datum[] = [];
  const masks: Float32Array[] = [];
  let inputTokens = 0;
  for (const e of cut) {
    const w = crossEntropyWeight(reduction, trainedTokens);
    const datum = shiftedDatum(e.tokens, { weights: e.mask.map((m) => m * w) });
    data.push(datum);
    masks.push(Float32Array.from(e.mask.slice(1)));
    inputTokens += datum.modelInput.length;
  }
  return { data, masks, trainedTokens, inputTokens };
}

/** Mean completion-token cross-entropy from the trainer's logprobs (backend-independent). */
export function meanCrossEntropy(
  logprobs: readonly Float32Array[],
  masks: readonly Float32Array[],
) {
  let nll = 0;
  let tokens = 0;
  logprobs.forEach((logp, i) => {
    const mask = masks[i]!;
    for (let t = 0; t < mask.length; t++) {
      nll -= mask[t]! * logp[t]!;
      tokens += mask[t]!;
    }
  });
  return tokens === 0 ? NaN : nll / tokens;
}

async function sftStep(
  ctx: ExecutorContext,
  spec: SftSpec,
  model: TrainerModel,
  pools: WeightedPool<SftExample>[],
  step: number,
  epoch: Epoch,
): Promise<StepRecordMetrics> {
  const timer = new PhaseTimer();
  const drawn = drawMixBatch(pools, spec.batchSize, stepRng(epoch.seed, 'sft', step));
  const maxTokens = Math.min(spec.maxSeqLen, maxContextTokens(ctx.resources));
  const reduction = ctx.resources.trainer.capabilities.reduction;
  const batch = sftBatch(
    drawn.map((d) => d.item),
    maxTokens,
    reduction,
  );
  const { result, optim } = await timer.time('train', async () => {
    const result = await model.forwardBackward(batch.data, 'cross_entropy');
    const optim = await model.optimStep(adamParams(spec, epoch.learningRateScale));
    return { result, optim };
  });
  const trainSeconds = timer.get('train');
  return {
    [METRIC.loss]: meanCrossEntropy(result.logprobs, batch.masks),
    [METRIC.gradNorm]: optim.gradNorm,
    [METRIC.trainedTokens]: batch.trainedTokens,
    ...trainingUsage(batch.trainedTokens),
    [METRIC.tokensPerSecond]: trainSeconds > 0 ? batch.inputTokens / trainSeconds : null,
    [METRIC.learningRate]: spec.optimizer.learningRate * epoch.learningRateScale,
    ...timer.metrics(),
  };
}

export async function runSft(ctx: ExecutorContext<'sft'>): Promise<ExecutorResult> {
  const spec = ctx.spec;
  const catalog = catalogOf(ctx.resources);
  const pools = mixPools(catalog, spec.data.mix, 'sft', (s) => catalog.sft(s));
  const opened = await openTrainerModel(ctx, 'lm');
  let model = opened.model;
  const endpoint = ctx.spec.endpoints.trainer;
  const notice = sftObjectiveNotice(
    ctx.resources.trainer.capabilities.reduction,
    endpoint === undefined ? undefined : `trainer endpoint '${endpoint}'`,
  );
  if (notice) await ctx.notice?.({ code: 'sft_sequence_mean', message: notice });
  const loop = await runTrainingLoop({
    ctx,
    model,
    doneSteps: opened.doneSteps,
    totalSteps: spec.steps,
    checkpointInterval: spec.checkpointInterval,
    runStep: (step, epoch) => sftStep(ctx, spec, model, pools, step, epoch),
    restore: async (point) => (model = await reopenModelAt(ctx, point, 'lm', model)),
  });
  const summary: ExecutorResult['summary'] = {
    steps: loop.lastStep,
    finalLoss: loop.lastMetrics[METRIC.loss] ?? null,
    checkpointPath: loop.checkpointPath,
  };
  if (!loop.stopped) {
    // Sampler weights of the final model, so an eval can serve it without a trainer.
    const exported = await model.saveWeightsForSampler(`${ctx.runId}-sampler`);
    summary['samplerWeightsPath'] = exported.path;
  }
  return { summary, finalCheckpoint: loop.checkpointPath, stopped: loop.stopped };
}
