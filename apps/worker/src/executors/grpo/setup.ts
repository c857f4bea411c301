// Everything a GRPO run holds across steps: the policy model, rollout environments for the
// policy and the frozen reference, the reference cache, the prompt pools. The reference is the
// run's starting weights (docs/recipe.md §4 "Decision"): exported once into the inference engine under
// its own name — on a resume, from a second model opened at the starting weights — unless the
// runtime provides a dedicated reference sampler.
import type { InferenceEngine, TrainerModel } from '@anneal/engines';
import type { ChatFormat, RolloutEnv } from '@anneal/envs';
import type { GrpoSpec } from '@anneal/protocol';
import { chatFormatFor } from '../common/chat-format.ts';
import type { WeightedPool } from '../common/mix-batch.ts';
import { openModelAt, openTrainerModel } from '../common/trainer-model.ts';
import type { PromptExample } from '../data/catalog.ts';
import { catalogOf, createSearchTool, maxContextTokens, mixPools } from '../data/resolve.ts';
import { RunSetupError } from '../../errors.ts';
import type { ExecutorContext } from '../types.ts';
import { ReferenceCache } from './reference-cache.ts';
import { syncWeights } from './weight-sync.ts';

export interface GrpoState {
  spec: GrpoSpec;
  model: TrainerModel;
  doneSteps: number;
  /** The base model's chat format (prompts, stop ids, turn parsing, tool results). */
  format: ChatFormat;
  pools: WeightedPool<PromptExample>[];
  policyEnv: RolloutEnv;
  references: ReferenceCache;
  /** Name the inference engine serves the current policy under. */
  policyName: string;
  /** Path of the sampler weights last synced to the inference engine. */
  samplerPath: string;
  /** Whether `samplerPath` is a policy export of this run (deleted once replaced), rather than
   * the reference export the policy starts from (kept: the reference is served from it). */
  samplerPathIsPolicyExport: boolean;
}

/** Policy and reference serving names, unique per run. */
export const servingNames = (runId: string) => ({
  policy: `${runId}-policy`,
  reference: `${runId}-reference`,
});

/** One sampler export name per step: SkyRL and hosted Tinker keep one checkpoint per
 * (model_id, name) and refuse a reused name (409, docs/engines.md "Trainer API"). A resumed run
 * trains a new model_id, so its names cannot collide with the first attempt's. */
export const samplerExportName = (runId: string, step: number) => `${runId}-sampler-${step}`;

/**
 * After the policy export of a step is served: remember its path and delete the previous
 * policy export on the trainer, when the backend can (deleteSamplerWeights), so a run keeps
 * one export rather than one per step. Best effort: a failed delete leaves a file behind and
 * never fails the step. The reference export the policy starts from is never deleted.
 */
export async function adoptPolicyExport(
  state: Pick<GrpoState, 'model' | 'samplerPath' | 'samplerPathIsPolicyExport'>,
  path: string,
): Promise<void> {
  const previous = state.samplerPathIsPolicyExport ? state.samplerPath : undefined;
  state.samplerPath = path;
  state.samplerPathIsPolicyExport = true;
  if (previous === undefined || previous === path || !state.model.deleteSamplerWeights) return;
  await state.model.deleteSamplerWeights(previous).catch(() => false);
}

async function referenceEngine(
  ctx: ExecutorContext,
  policy: TrainerModel,
  fresh: boolean,
): Promise<{ engine: InferenceEngine; model?: string; path?: string }> {
  const { resources, runId } = ctx;
  if (resources.referenceInference) return { engine: resources.referenceInference };
  const name = servingNames(runId).reference;
  const source = fresh ? policy : await openModelAt(ctx, resources.model, 'lm');
  const served = await syncWeights(source, resources.inference, `${runId}-reference`, name);
  return { engine: resources.inference, model: name, path: served.path };
}

/** Rubrics without a programmatic check need the LLM judge: refuse the run before any step
 * rather than fail mid-run at the first reward (docs/recipe.md §3). */
function checkNoJudgeNeeded(pools: readonly WeightedPool<PromptExample>[]): void {
  pools.forEach((pool, i) => {
    const rubric = pool.items
      .flatMap((p) => (p.kind === 'rubric' ? p.rubrics : []))
      .find((r) => r.check === undefined);
    if (rubric) {
      throw new RunSetupError(
        `/data/mix/${i}/source: dataset '${pool.name}' has rubric "${rubric.text}" without a ` +
          'programmatic check and this run has no judge (set endpoints.judge)',
      );
    }
  });
}

export async function setupGrpo(ctx: ExecutorContext): Promise<GrpoState> {
  const spec = ctx.spec as GrpoSpec;
  const { resources, runId } = ctx;
  const catalog = catalogOf(resources);
  const pools = mixPools(catalog, spec.data.mix, 'prompts', (s) => catalog.prompts(s));
  if (!resources.judge) checkNoJudgeNeeded(pools);
  const tool = createSearchTool(
    resources,
    {
      resultsPerCall: spec.tools.resultsPerCall,
      maxQueryLength: spec.tools.maxQueryLength,
      maxCalls: spec.tools.maxCallsPerRollout,
    },
    '/tools',
  );
  const format = chatFormatFor(resources, tool);
  const { model, doneSteps } = await openTrainerModel(ctx, 'lm');
  const fresh = ctx.resumeFrom === null;
  const reference = await referenceEngine(ctx, model, fresh);
  const names = servingNames(runId);
  let samplerPath: string;
  let samplerPathIsPolicyExport = false;
  if (fresh && reference.path !== undefined) {
    // Same weights as the reference at step 0: serve that export as the policy too.
    await resources.inference.loadWeights({ name: names.policy, path: reference.path });
    samplerPath = reference.path;
  } else {
    samplerPathIsPolicyExport = true;
    const exportName = samplerExportName(runId, doneSteps);
    samplerPath = (await syncWeights(model, resources.inference, exportName, names.policy)).path;
  }
  const config = {
    maxContextTokens: maxContextTokens(resources),
    maxResponseTokens: spec.rollout.maxTokens,
    temperature: spec.rollout.temperature,
    topP: spec.rollout.topP,
  };
  const policyEnv: RolloutEnv = {
    engine: resources.inference,
    format,
    tool,
    config: { ...config, model: names.policy },
  };
  const referenceEnv: RolloutEnv = {
    engine: reference.engine,
    format,
    tool,
    config: reference.model === undefined ? config : { ...config, model: reference.model },
  };
  return {
    spec,
    model,
    doneSteps,
    format,
    pools,
    policyEnv,
    references: new ReferenceCache(referenceEnv, spec.seed, spec.reference.cacheGenerations),
    policyName: names.policy,
    samplerPath,
    samplerPathIsPolicyExport,
  };
}
