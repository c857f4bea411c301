// Resolves a run's `model` reference: a registered base model, or `{checkpoint: {run, step?}}`
// — an earlier run's final checkpoint, or its kept checkpoint at `step` (a fork; read from the
// run's checkpoint catalogue), on top of that run's own base model.
import type { ModelRef, OperatorConfig } from '@anneal/protocol';
import { type StoreContext, getCatalogueEntry, getRun } from '@anneal/store';
import { RunSetupError } from '../errors.ts';
import type { ResolvedModel } from '../executors/types.ts';

/** The seam's ResolvedModel with the tokenizer name always set (else the model id), and the
 * base model's hf tokenizer / tool format / chat format when it declares one. */
export type ModelWithTokenizer = ResolvedModel & {
  tokenizer: string;
  tokenizerSource?: TokenizerSource;
};
import { readRunOutcome } from './run-outcome.ts';
import type { TokenizerSource } from './tokenizers.ts';

/** Checkpoint chains (sft -> rm / grpo -> eval …) are short; a longer one is a cycle or a bug. */
const MAX_CHAIN = 16;

function baseModel(config: OperatorConfig, name: string | undefined, field: string) {
  if (name === undefined) {
    throw new RunSetupError(`${field}: no model given and the operator config has no default`);
  }
  const entry = config.baseModels[name];
  if (!entry) {
    const declared = Object.keys(config.baseModels).join(', ') || 'none';
    throw new RunSetupError(`${field}: unknown base model '${name}' (declared: ${declared})`);
  }
  const { tokenizer = entry.model, toolFormat, chatFormat } = entry;
  const hf = typeof tokenizer === 'string' ? undefined : tokenizer;
  const source: TokenizerSource | undefined =
    hf || toolFormat || chatFormat
      ? {
          baseModel: name,
          ...(hf && { hf }),
          ...(toolFormat && { toolFormat }),
          ...(chatFormat && { chatFormat }),
        }
      : undefined;
  return {
    name,
    model: entry.model,
    tokenizer: hf ? hf.path : (tokenizer as string),
    ...(source && { tokenizerSource: source }),
  };
}

/** The referenced run's weights: its final checkpoint (+ sampler export when it recorded one). */
async function checkpointOf(store: StoreContext, runId: string, tenant: string, field: string) {
  const run = await getRun(store, runId, { tenant });
  if (!run) throw new RunSetupError(`${field}: no run ${runId} in this tenant`);
  const outcome = await readRunOutcome(store, runId);
  const checkpoint = outcome.finalCheckpoint ?? run.checkpoint?.path;
  if (run.state !== 'succeeded' || checkpoint === undefined) {
    throw new RunSetupError(
      `${field}: run ${runId} is ${run.state}${checkpoint ? '' : ' with no checkpoint'}; ` +
        'a checkpoint reference needs a run that succeeded',
    );
  }
  const sampler = outcome.summary?.samplerWeightsPath;
  return {
    checkpoint,
    ...(typeof sampler === 'string' && { samplerPath: sampler }),
    parent: run.spec.model,
  };
}

/** The source run's kept checkpoint at `step` (a fork): any state, as long as retention kept it. */
async function catalogued(
  store: StoreContext,
  runId: string,
  tenant: string,
  step: number,
  field: string,
) {
  const run = await getRun(store, runId, { tenant });
  if (!run) throw new RunSetupError(`${field}: no run ${runId} in this tenant`);
  const entry = await getCatalogueEntry(store, runId, step);
  if (!entry || entry.deleted) {
    throw new RunSetupError(
      `${field}: run ${runId} has no ${entry ? 'kept ' : ''}checkpoint at step ${step}` +
        (entry ? ' (deleted by its checkpoint retention)' : ''),
    );
  }
  return {
    checkpoint: entry.path,
    ...(entry.samplerPath !== undefined && { samplerPath: entry.samplerPath }),
    parent: run.spec.model,
  };
}

/** How results name a checkpoint reference: the run id, `<run>@<step>` for a fork's. */
function checkpointLabel(ref: { run: string; step?: number }): string {
  return ref.step === undefined ? ref.run : `${ref.run}@${ref.step}`;
}

export async function resolveModel(
  store: StoreContext,
  config: OperatorConfig,
  model: ModelRef | undefined,
  tenant: string,
  /** JSON pointer of the reference in the spec (`/model`, or `/models/N` for eval). */
  at = '/model',
): Promise<ModelWithTokenizer> {
  const source = model?.checkpoint?.run;
  if (source === undefined) {
    const base = baseModel(config, model?.base ?? config.defaults.baseModel, `${at}/base`);
    const { name: label, model: baseModelId, ...tokenizer } = base;
    return { label, baseModel: baseModelId, ...tokenizer, checkpoint: null };
  }
  const field = `${at}/checkpoint/run`;
  const step = model?.checkpoint?.step;
  const weights =
    step === undefined
      ? await checkpointOf(store, source, tenant, field)
      : await catalogued(store, source, tenant, step, `${at}/checkpoint/step`);
  // The weights descend from the source run's own model: follow the chain to its base model.
  let ref = weights.parent;
  for (let depth = 0; depth < MAX_CHAIN && ref?.checkpoint !== undefined; depth++) {
    const parent = await getRun(store, ref.checkpoint.run, { tenant });
    if (!parent) throw new RunSetupError(`${field}: ancestor run ${ref.checkpoint.run} is gone`);
    ref = parent.spec.model;
  }
  if (ref?.checkpoint !== undefined) {
    throw new RunSetupError(`${field}: checkpoint chain longer than ${MAX_CHAIN} runs`);
  }
  const base = baseModel(config, ref?.base ?? config.defaults.baseModel, `${field} (${source})`);
  const { parent: _parent, ...paths } = weights;
  const { name: _name, model: baseModelId, ...tokenizer } = base;
  const label = checkpointLabel({ run: source, ...(step !== undefined && { step }) });
  return { label, baseModel: baseModelId, ...tokenizer, ...paths };
}
