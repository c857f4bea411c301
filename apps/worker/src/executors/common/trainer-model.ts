// Opens the run's trainer model: created fresh, then restored from the resume checkpoint (this
// run's last) or, on a fresh start, from the starting checkpoint of an earlier run (spec.model).
import type { TrainerModel } from '@anneal/engines';
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

/** A model holding `source`'s weights (base weights when it names no checkpoint). */
export async function openModelAt(
  ctx: ExecutorContext,
  source: ResolvedModel,
  head: 'lm' | 'value',
): Promise<TrainerModel> {
  const model = await ctx.resources.trainer.createModel({
    baseModel: source.baseModel,
    loraRank: loraRank(ctx),
    seed: ctx.spec.seed,
    head,
  });
  if (source.checkpoint !== null) await model.loadWeights(source.checkpoint);
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
    return { model: await openModelAt(ctx, ctx.resources.model, head), doneSteps: 0 };
  }
  const resumed: ResolvedModel = { ...ctx.resources.model, checkpoint: ctx.resumeFrom.path };
  return { model: await openModelAt(ctx, resumed, head), doneSteps: ctx.resumeFrom.step };
}

/** A guardrail rollback of a run whose only state is its trainer model (sft, rm): a model opened
 * at `point` (the run's starting weights when its path is null) replaces `discarded`. */
export async function reopenModelAt(
  ctx: ExecutorContext,
  point: RestorePoint,
  head: 'lm' | 'value',
  discarded: TrainerModel,
): Promise<TrainerModel> {
  const source =
    point.path === null ? ctx.resources.model : { ...ctx.resources.model, checkpoint: point.path };
  const model = await openModelAt(ctx, source, head);
  await discarded.release?.().catch(() => undefined); // the run's end releases it otherwise
  return model;
}
