// Everything a GRPO run holds across steps: the policy model, rollout environments for the
// policy and the frozen reference, the reference cache, the prompt pools. The reference is the
// run's starting weights (docs/recipe.md §4 "Decision"): exported once into the inference engine under
// its own name — on a resume, or where the trainer's own sampler would load an export of the
// policy into the policy's adapter slot (SkyRL JAX), from a second model opened at the starting
// weights — unless the runtime provides a dedicated reference sampler.
// With rollout.maxPolicyLag k ≥ 1 each policy version is served under its own name, so the
// batches sampled while earlier steps train stay on the version they started with
// (docs/recipe.md "Pipelined GRPO"); with k = 0 the policy keeps one stable name.
import type { InferenceEngine, TrainerModel } from '@anneal/engines';
import type { ChatFormat, RolloutEnv } from '@anneal/envs';
import { ownSamplerIssue, referenceNeedsOwnModel, type GrpoSpec } from '@anneal/protocol';
import { chatFormatFor } from '../common/chat-format.ts';
import type { WeightedPool } from '../common/mix-batch.ts';
import { openModelAt, openTrainerModel } from '../common/trainer-model.ts';
import type { PromptExample } from '../../resources/data/catalog.ts';
import {
  catalogOf,
  createSearchTool,
  maxContextTokens,
  mixPools,
} from '../../resources/data/resolve.ts';
import { RunSetupError } from '../../errors.ts';
import type { ExecutorContext } from '../types.ts';
import { BusyMeter } from './busy-meter.ts';
import { RolloutLedger } from './ledger.ts';
import { ProbeScoring, copiesProbeWeights } from './probe-weights.ts';
import type { LaunchedProbe } from './mismatch-probe.ts';
import { PolicyVersions } from './policy-versions.ts';
import { ReferenceCache } from './reference-cache.ts';
import { syncWeights } from '../common/weight-sync.ts';
import { type Epoch, epochOf } from '../common/guardrails/epoch.ts';

export interface GrpoState {
  spec: GrpoSpec;
  model: TrainerModel;
  doneSteps: number;
  /** The base model's chat format (prompts, stop ids, turn parsing, tool results). */
  format: ChatFormat;
  pools: WeightedPool<PromptExample>[];
  /** Rollout environment of the policy; a batch sets `config.model` to its pinned version's name. */
  policyEnv: RolloutEnv;
  references: ReferenceCache;
  /** The policy versions served, current and pinned by launched batches. */
  versions: PolicyVersions;
  /** Wall time any policy or reference rollout is running (the sampler's busy share). */
  samplerBusy: BusyMeter;
  /** The guardrail generation the batches are drawn in (common/guardrails/epoch.ts). */
  epoch: Epoch;
  /** The run's rollout ledger; null when the runtime gives none. */
  ledger: RolloutLedger | null;
  /** Where lagged steps' mismatch probes are scored (probe-weights.ts). */
  probeScoring: ProbeScoring;
  /** The next step's probe, launched ahead of it (probe-launch.ts); null when none is. */
  probeAhead: LaunchedProbe | null;
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

/** Serving name of policy version `version` (the policy after that step) when versions are
 * served side by side (rollout.maxPolicyLag ≥ 1); with lag 0 every version is `policy`. After
 * a guardrail rollback the versions of the new generation get names of their own (`-r<n>`):
 * version v of generation n is other weights than version v before the rollback. */
export const policyServingName = (
  runId: string,
  maxPolicyLag: number,
  version: number,
  rollbacks = 0,
) => {
  const policy = servingNames(runId).policy;
  if (maxPolicyLag === 0) return policy;
  return rollbacks === 0 ? `${policy}-v${version}` : `${policy}-r${rollbacks}-v${version}`;
};

/** The reference is exported from the policy's own starting weights on a fresh start, except
 * where sampling that export would load it into the policy's adapter slot (SkyRL JAX through its
 * own sampler): then, as on a resume, from a second model opened at the starting weights. */
async function referenceEngine(
  ctx: ExecutorContext,
  policy: TrainerModel,
  fresh: boolean,
): Promise<{ engine: InferenceEngine; model?: string; path?: string; shared?: boolean }> {
  const { resources, runId } = ctx;
  if (resources.referenceInference) return { engine: resources.referenceInference };
  const name = servingNames(runId).reference;
  const ownModel = referenceNeedsOwnModel(resources.ownSampler?.backend);
  // Only its weights are exported: no optimizer state to load.
  const source =
    fresh && !ownModel
      ? policy
      : await openModelAt(ctx, resources.model, 'lm', { optimizer: false });
  const shared = resources.sharedReference;
  if (shared !== undefined) {
    // Served once for every run of this tenant and start (docs/operations.md "Shared
    // references"): this export is offered, and used as the step-0 policy either way.
    const exported = await source.saveWeightsForSampler(`${runId}-reference`);
    const model = await shared.serve(exported.path);
    return { engine: resources.inference, model, path: exported.path, shared: true };
  }
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

/** The submission check of a GRPO run on its trainer's own sampler, again at set-up (the
 * operator config may have changed since). */
export function checkOwnSampler(ctx: ExecutorContext, spec: GrpoSpec): void {
  const backend = ctx.resources.ownSampler?.backend;
  if (backend === undefined) return;
  const issue = ownSamplerIssue({
    backend,
    trainer: spec.endpoints.trainer ?? 'trainer',
    inference: spec.endpoints.inference ?? 'inference',
    maxPolicyLag: spec.rollout.maxPolicyLag,
  });
  if (issue) throw new RunSetupError(`${issue.path}: ${issue.message}`);
}

export async function setupGrpo(ctx: ExecutorContext<'grpo'>): Promise<GrpoState> {
  const spec = ctx.spec;
  const { resources, runId } = ctx;
  checkOwnSampler(ctx, spec);
  const catalog = catalogOf(resources);
  const pools = mixPools(catalog, spec.data.mix, 'prompts', (s) => catalog.prompts(s));
  if (!resources.judge) checkNoJudgeNeeded(pools);
  const tool = createSearchTool(resources, spec.tools, '/tools');
  const format = chatFormatFor(resources, tool);
  const { model, doneSteps } = await openTrainerModel(ctx, 'lm');
  const fresh = ctx.resumeFrom === null;
  const reference = await referenceEngine(ctx, model, fresh);
  const guard = ctx.guardrails;
  const epoch = epochOf(spec.seed, guard?.rollbacks ?? 0, guard?.learningRateScale ?? 1);
  const policyName = policyServingName(
    runId,
    spec.rollout.maxPolicyLag,
    doneSteps,
    epoch.rollbacks,
  );
  let initial: { path: string; policyExport: boolean };
  if (fresh && reference.path !== undefined) {
    // Same weights as the reference at step 0: serve that export as the policy too.
    await resources.inference.loadWeights({ name: policyName, path: reference.path });
    initial = { path: reference.path, policyExport: false };
  } else {
    const exportName = samplerExportName(runId, doneSteps);
    const served = await syncWeights(model, resources.inference, exportName, policyName);
    initial = { path: served.path, policyExport: true };
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
    config: { ...config, model: policyName },
  };
  const referenceEnv: RolloutEnv = {
    engine: reference.engine,
    format,
    tool,
    // Never trained on or scored against the trainer: sampled without logprobs, which are most
    // of a vLLM reply's bytes; see
    // docs/performance.md "Orchestrator overhead: model-like text, references without logprobs".
    config: {
      ...config,
      ...(reference.model !== undefined && { model: reference.model }),
      logprobs: false,
    },
  };
  return {
    spec,
    model,
    doneSteps,
    format,
    pools,
    policyEnv,
    references: new ReferenceCache(
      referenceEnv,
      spec.seed,
      spec.reference.cacheGenerations,
      reference.shared === true
        ? resources.sharedReference?.rollouts(
            JSON.stringify({ config, tools: spec.tools, search: spec.endpoints.search ?? null }),
          )
        : undefined,
      spec.reference.cacheMaxGroups,
    ),
    versions: new PolicyVersions(
      { inference: resources.inference, model },
      { version: doneSteps, name: policyName, ...initial },
    ),
    samplerBusy: new BusyMeter(),
    epoch,
    ledger: await RolloutLedger.open(ctx),
    probeScoring: new ProbeScoring(
      copiesProbeWeights(model, resources.trainer.capabilities.backend),
      {
        createModel: () => openModelAt(ctx, { ...resources.model, checkpoint: null }, 'lm', FRESH),
        temperature: spec.rollout.temperature,
        onDeleteFailed: async (path, error) =>
          ctx.notice?.({
            code: 'checkpoint_delete_failed',
            message: `the mismatch probe's copy of the trained weights (${path}) was scored but deleting it on the trainer failed: ${String(error)}`,
          }),
      },
    ),
    probeAhead: null,
  };
}

/** The probe model's start: base weights (each step loads its copy over them), no optimizer. */
const FRESH = { optimizer: false } as const;
