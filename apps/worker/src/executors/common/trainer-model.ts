// Opens the run's trainer model: created fresh, then restored from the resume checkpoint (this
// run's last) or, on a fresh start, from the starting checkpoint of an earlier run (spec.model).
// A resume (worker loss, pause/resume, guardrail rollback) restores everything the checkpoint
// holds; a start from another run's checkpoint (a fork) loads its weights only, with a fresh
// optimizer, unless the spec asks for the parent's (`model.checkpoint.loadOptimizer`) — as
// tinker-cookbook's rl/train.py does (`create_training_client_from_state` for a new run,
// `..._with_optimizer` only to resume the same one).
import type { LoadWeightsOptions, TrainerModel } from '@anneal/engines';
import { adamParamsNotice, gradClipNotice } from '@anneal/protocol';
import type { ExecutorContext, ResolvedModel, RestorePoint } from '../types.ts';

/** LoRA rank for kinds whose spec has no `lora` section (eval only samples). */
const DEFAULT_LORA_RANK = 32;

export interface OpenedModel {
  model: TrainerModel;
  /** Last step already done (0 on a fresh start). */
  doneSteps: number;
}

function loraRank(ctx: ExecutorContext): number {
  return 'lora' in ctx.spec ? ctx.spec.lora.rank : DEFAULT_LORA_RANK;
}

/** What a start from the run's starting weights (`spec.model`) restores: the starting
 * checkpoint's optimizer state only when the spec says `model.checkpoint.loadOptimizer: true`. */
export function startingLoad(ctx: ExecutorContext): LoadWeightsOptions {
  const model = 'model' in ctx.spec ? ctx.spec.model : undefined;
  return { optimizer: model?.checkpoint?.loadOptimizer === true };
}

/** This run's own checkpoint (a resume or a rollback): weights and optimizer state. */
export const RESUME_LOAD: LoadWeightsOptions = { optimizer: true };

/** A model holding `source`'s weights (base weights when it names no checkpoint); `load` says
 * whether the checkpoint's optimizer state comes with them. */
export async function openModelAt(
  ctx: ExecutorContext,
  source: ResolvedModel,
  head: 'lm' | 'value',
  load: LoadWeightsOptions,
): Promise<TrainerModel> {
  const model = await ctx.resources.trainer.createModel({
    baseModel: source.baseModel,
    loraRank: loraRank(ctx),
    seed: ctx.spec.seed,
    head,
  });
  if (source.checkpoint !== null) await model.loadWeights(source.checkpoint, load);
  return model;
}

/** Once per run start: a `run:notice` when the spec asks for gradient clipping that the
 * trainer's backend does not apply (docs/engines.md "Gradient norm"), and when the backend
 * applies only the learning rate of the Adam settings; the run goes on. */
export async function noticeTrainerLimits(ctx: ExecutorContext): Promise<void> {
  const backend = ctx.resources.trainer.capabilities.backend;
  const clip = 'optimizer' in ctx.spec ? ctx.spec.optimizer.gradClipNorm : 0;
  const message = backend && gradClipNotice(backend, clip, ctx.spec.endpoints.trainer);
  if (message) await ctx.notice?.({ code: 'grad_clip_not_applied', message });
  const adam =
    backend && 'optimizer' in ctx.spec && adamParamsNotice(backend, ctx.spec.endpoints.trainer);
  if (adam) await ctx.notice?.({ code: 'adam_params_not_applied', message: adam });
}

/** The model to train: resumed from this run's checkpoint, else from the starting weights. */
export async function openTrainerModel(
  ctx: ExecutorContext,
  head: 'lm' | 'value',
): Promise<OpenedModel> {
  await noticeTrainerLimits(ctx);
  if (ctx.resumeFrom === null) {
    const model = await openModelAt(ctx, ctx.resources.model, head, startingLoad(ctx));
    return { model, doneSteps: 0 };
  }
  const resumed: ResolvedModel = { ...ctx.resources.model, checkpoint: ctx.resumeFrom.path };
  const model = await openModelAt(ctx, resumed, head, RESUME_LOAD);
  return { model, doneSteps: ctx.resumeFrom.step };
}

/** A guardrail rollback of a run whose only state is its trainer model (sft, rm): a model opened
 * at `point` (the run's starting weights when its path is null) replaces `discarded`. */
export async function reopenModelAt(
  ctx: ExecutorContext,
  point: RestorePoint,
  head: 'lm' | 'value',
  discarded: TrainerModel,
): Promise<TrainerModel> {
  const [source, load] = restoreSource(ctx, point);
  const model = await openModelAt(ctx, source, head, load);
  await discarded.release?.().catch(() => undefined); // the run's end releases it otherwise
  return model;
}

/** Where a rollback to `point` opens the model: this run's checkpoint with its optimizer state,
 * or (no checkpoint yet) the run's starting weights as the run started from them. */
export function restoreSource(
  ctx: ExecutorContext,
  point: RestorePoint,
): [ResolvedModel, LoadWeightsOptions] {
  if (point.path === null) return [ctx.resources.model, startingLoad(ctx)];
  return [{ ...ctx.resources.model, checkpoint: point.path }, RESUME_LOAD];
}
