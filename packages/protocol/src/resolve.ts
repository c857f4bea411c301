// Resolves a run spec's named resources against the operator config: fills operator defaults,
// rejects unknown names (naming the field) and runs the endpoints cannot do (trainer losses,
// GRPO sampling settings the IS ratio cannot correct).
import { mergeRetention } from './checkpoints.ts';
import { kindRecordKeys } from './step-metric-records.ts';
import {
  TRAINER_BACKEND_TRAITS,
  grpoSamplingIssues,
  trainerCapabilityIssue,
} from './capabilities.ts';
import { datasetIssues, specDatasets } from './datasets.ts';
import { type Issue, type Parsed, joinPointer } from './document.ts';
import type { OperatorConfig, VllmServer } from './operator-config.ts';
import { vllmRankIssue, vllmWeightsFormatIssue } from './operator-config-vllm.ts';
import { ownSamplerIssue, samplerServerIssue, vllmPairingIssue } from './sampler-pairing.ts';
import type { RunKind } from './run-spec/common.ts';
import type { RunSpec } from './run-spec/index.ts';

type EndpointKey = 'inference' | 'trainer' | 'search' | 'rewardModel' | 'judge';

/** Endpoints each kind must have (after defaults); rewardModel is always optional. */
export const REQUIRED_ENDPOINTS: Readonly<Record<RunKind, readonly EndpointKey[]>> = {
  sft: ['trainer'],
  rm: ['trainer'],
  grpo: ['trainer', 'inference', 'search'],
  eval: ['inference', 'search'],
};

const SECTION_OF: Record<
  EndpointKey,
  'inference' | 'trainers' | 'search' | 'rewardModels' | 'judges'
> = {
  inference: 'inference',
  trainer: 'trainers',
  search: 'search',
  rewardModel: 'rewardModels',
  judge: 'judges',
};

/** Endpoints a kind may use without needing them: the preference model (grpo, eval) and the
 * rubric judge (grpo); the operator default fills them in when set. */
export function usesOptionalEndpoint(kind: RunKind, key: EndpointKey): boolean {
  if (key === 'rewardModel') return kind === 'grpo' || kind === 'eval';
  return key === 'judge' && kind === 'grpo';
}

/** Facts about registered datasets the control plane learns when it validates them at start. */
export interface DatasetFacts {
  /** Registered datasets with rubrics that have no programmatic check (need an LLM judge). */
  needsJudge?: readonly string[];
}

/** A resolution problem: an unknown/missing name, or a capability the trainer lacks. */
export interface ResolveIssue extends Issue {
  reason: 'unknown' | 'missing' | 'capability';
}

/** A spec whose pool, model and required endpoints are all set and exist in the config. */
export type ResolvedRunSpec = RunSpec & { pool: string };

function declared(names: readonly string[]): string {
  return names.length > 0 ? names.join(', ') : 'none';
}

function endpointIssues(spec: RunSpec, config: OperatorConfig): ResolveIssue[] {
  const issues: ResolveIssue[] = [];
  for (const key of Object.keys(SECTION_OF) as EndpointKey[]) {
    const name = spec.endpoints[key];
    const names = Object.keys(config[SECTION_OF[key]]);
    if (name === undefined) {
      if (REQUIRED_ENDPOINTS[spec.kind].includes(key)) {
        issues.push({
          path: joinPointer('endpoints', key),
          message: `a ${spec.kind} run needs a ${key} endpoint and the operator config has no default (declared: ${declared(names)})`,
          reason: 'missing',
        });
      }
    } else if (!names.includes(name)) {
      issues.push({
        path: joinPointer('endpoints', key),
        message: `unknown ${key} endpoint '${name}' (declared: ${declared(names)})`,
        reason: 'unknown',
      });
    }
  }
  return issues;
}

function capabilityIssues(spec: RunSpec, config: OperatorConfig): ResolveIssue[] {
  const name = spec.endpoints.trainer;
  const trainer = name === undefined ? undefined : config.trainers[name];
  if (!trainer || !REQUIRED_ENDPOINTS[spec.kind].includes('trainer')) return [];
  const message = trainerCapabilityIssue(trainer.capabilities, spec.kind, name);
  return message === undefined
    ? []
    : [{ path: joinPointer('endpoints', 'trainer'), message, reason: 'capability' }];
}

/**
 * An eval's base-model targets (no checkpoint to take a sampler export from) are exported to
 * the sampler through a trainer endpoint, so an eval with one needs a trainer that declares
 * eval: refused here rather than accepted and failed by a worker ("no trainer endpoint").
 */
function evalTrainerIssues(spec: RunSpec, config: OperatorConfig): ResolveIssue[] {
  if (spec.kind !== 'eval') return [];
  const name = spec.endpoints.trainer;
  if (name !== undefined) {
    const trainer = config.trainers[name];
    const message = trainer && trainerCapabilityIssue(trainer.capabilities, 'eval', name);
    return message ? [{ path: '/endpoints/trainer', message, reason: 'capability' }] : [];
  }
  const targets = spec.models
    ? spec.models.map((ref, i) => ({ ref, path: joinPointer('models', i) }))
    : [{ ref: spec.model ?? {}, path: '/model' }];
  return targets
    .filter(({ ref }) => ref.checkpoint === undefined)
    .map(({ ref, path }) => ({
      path,
      message:
        `evaluating base model '${ref.base ?? config.defaults.baseModel ?? 'default'}' needs a trainer ` +
        'endpoint that declares eval to export its weights to the sampler; set endpoints.trainer ' +
        '(the operator config has no default trainer that declares eval)',
      reason: 'missing' as const,
    }));
}

/** GRPO rollout settings the trainer and the inference endpoint can match, so the IS ratio
 * measures the train–inference mismatch (docs/recipe.md §2; capabilities.ts). */
function samplingIssues(spec: RunSpec, config: OperatorConfig): ResolveIssue[] {
  if (spec.kind !== 'grpo') return [];
  const named = <T>(name: string | undefined, section: Record<string, T>) => {
    const entry = name === undefined ? undefined : section[name];
    return name === undefined || entry === undefined ? undefined : { name, config: entry };
  };
  return grpoSamplingIssues(
    spec.rollout,
    named(spec.endpoints.trainer, config.trainers),
    named(spec.endpoints.inference, config.inference),
  ).map((issue) => ({ ...issue, reason: 'capability' as const }));
}

/** Policy weights a GRPO run's vLLM endpoint cannot load: a LoRA rank above its
 * `--max-lora-rank`, a trainer backend whose sampler exports would be full models
 * (operator-config-vllm.ts; docs/engines.md "Errors"), or one whose sampler sync runs its own
 * inference engines (sampler-pairing.ts). Refused now, not at the first sync. */
function vllmIssues(spec: RunSpec, config: OperatorConfig): ResolveIssue[] {
  if (spec.kind !== 'grpo' && spec.kind !== 'eval') return [];
  const name = spec.endpoints.inference;
  const endpoint = name === undefined ? undefined : config.inference[name];
  if (name === undefined || endpoint?.type !== 'vllm') return [];
  const issues: ResolveIssue[] = [];
  const served = serverIssue(spec, config, name, endpoint.server ?? 'vllm');
  if (served !== undefined) issues.push(served);
  // The embedded sampler loads ONNX weight sets: no LoRA rank or adapter format applies.
  if (spec.kind !== 'grpo' || endpoint.server === 'anneal-embedded') return issues;
  const rank = vllmRankIssue({ name, maxLoraRank: endpoint.maxLoraRank }, spec.lora.rank);
  if (rank !== undefined) issues.push({ path: '/lora/rank', message: rank, reason: 'capability' });
  const trainer =
    spec.endpoints.trainer === undefined ? undefined : config.trainers[spec.endpoints.trainer];
  const backend = trainer?.type === 'tinker' ? trainer.backend : undefined;
  const format = backend === undefined ? undefined : TRAINER_BACKEND_TRAITS[backend].samplerExport;
  const weights = format === 'full' ? vllmWeightsFormatIssue({ name }, format) : undefined;
  if (weights !== undefined) {
    const message = `${weights} (trainer endpoint '${spec.endpoints.trainer}' is backend ${backend})`;
    issues.push({ path: joinPointer('endpoints', 'inference'), message, reason: 'capability' });
  }
  const pairing =
    backend === undefined
      ? undefined
      : vllmPairingIssue({ backend, trainer: spec.endpoints.trainer ?? '?', inference: name });
  if (pairing !== undefined) {
    issues.push({
      path: joinPointer('endpoints', 'inference'),
      message: pairing,
      reason: 'capability',
    });
  }
  return issues;
}

/** A vLLM endpoint's server (vLLM, or the embedded sampler server) and the trainer's sampler
 * exports must match (sampler-pairing.ts `samplerServerIssue`). */
function serverIssue(
  spec: RunSpec,
  config: OperatorConfig,
  inference: string,
  server: VllmServer,
): ResolveIssue | undefined {
  const trainerName = spec.endpoints.trainer;
  const trainer = trainerName === undefined ? undefined : config.trainers[trainerName];
  if (trainerName === undefined || trainer === undefined) return undefined;
  // An in-worker embedded trainer (type: embedded) exports ONNX too; beside a `server: vllm`
  // endpoint it is left to the first sync, as before (tests pair it with vLLM fakes that load
  // any directory), but an anneal-embedded endpoint accepts it.
  const exportFormat =
    trainer.type === 'embedded'
      ? server === 'vllm'
        ? undefined
        : 'onnx'
      : trainer.backend === undefined
        ? undefined
        : TRAINER_BACKEND_TRAITS[trainer.backend].samplerExport;
  const message = samplerServerIssue({ server, inference, trainer: trainerName, exportFormat });
  return message === undefined
    ? undefined
    : { path: joinPointer('endpoints', 'inference'), message, reason: 'capability' };
}

/** A GRPO run sampling through its trainer's own sampler (inference `type: tinker`) whose backend
 * cannot serve the reference or older policy versions that way (sampler-pairing.ts). */
function ownSamplerIssues(spec: RunSpec, config: OperatorConfig): ResolveIssue[] {
  if (spec.kind !== 'grpo') return [];
  const inference = spec.endpoints.inference;
  const trainer = spec.endpoints.trainer;
  if (inference === undefined || trainer === undefined) return [];
  const endpoint = config.trainers[trainer];
  if (config.inference[inference]?.type !== 'tinker' || endpoint?.type !== 'tinker') return [];
  if (endpoint.backend === undefined) return [];
  const issue = ownSamplerIssue({
    backend: endpoint.backend,
    trainer,
    inference,
    maxPolicyLag: spec.rollout.maxPolicyLag,
  });
  return issue ? [{ ...issue, reason: 'capability' }] : [];
}

/** A base model talking in its own chat template trains only on data its template renders:
 * registered sft datasets (their `turns` rows). The built-in tasks are the embedded model's
 * tokens and preference pairs are marker-format text, so rm runs and built-in sft sources are
 * refused now when `model` names such a base (a checkpoint's base is known at run set-up,
 * which refuses them too). */
function chatFormatIssues(spec: RunSpec, config: OperatorConfig): ResolveIssue[] {
  if (spec.kind !== 'sft' && spec.kind !== 'rm') return [];
  const base = spec.model?.base;
  if (base === undefined || config.baseModels[base]?.chatFormat?.type !== 'template') return [];
  const template = `base model '${base}' has chatFormat {type: template}`;
  if (spec.kind === 'rm') {
    const message = `${template}; rm runs train on preference pairs in the marker format, which its chat template does not render`;
    return [{ path: '/model/base', message, reason: 'capability' }];
  }
  return spec.data.mix.flatMap(({ source }, i) =>
    config.datasets[source]?.kind === 'sft'
      ? []
      : [
          {
            path: joinPointer('data', 'mix', i, 'source'),
            message: `${template}; '${source}' is not a registered sft dataset (the built-in tasks are the embedded model's tokens): register one written as turns`,
            reason: 'capability' as const,
          },
        ],
  );
}

/** Rubric datasets graded by an LLM judge need one: refused now, not mid-run (docs/recipe.md §3). */
function judgeIssues(spec: RunSpec, config: OperatorConfig, facts: DatasetFacts): ResolveIssue[] {
  if (spec.endpoints.judge !== undefined || !usesOptionalEndpoint(spec.kind, 'judge')) return [];
  const judges = declared(Object.keys(config.judges));
  return specDatasets(spec)
    .filter(({ name }) => facts.needsJudge?.includes(name))
    .map(({ name, path }) => ({
      path,
      message: `dataset '${name}' has rubrics without a programmatic check and this run has no judge (set endpoints.judge or defaults.judge; declared judges: ${judges})`,
      reason: 'missing' as const,
    }));
}

/** An eval with `judge: llm` grades with the run's judge endpoint (docs/evaluation.md "Grading"). */
const gradesWithJudge = (spec: RunSpec) => spec.kind === 'eval' && spec.judge === 'llm';

function evalJudgeIssues(spec: RunSpec, config: OperatorConfig): ResolveIssue[] {
  if (!gradesWithJudge(spec) || spec.endpoints.judge !== undefined) return [];
  const judges = declared(Object.keys(config.judges));
  return [
    {
      path: '/judge',
      message: `judge: llm grades answers with a judge endpoint and this run has none (set endpoints.judge or defaults.judge; declared judges: ${judges})`,
      reason: 'missing',
    },
  ];
}

/** The endpoints a run uses: its own names, else the operator defaults for the endpoints its kind
 * uses (required, optional, the judge of a `judge: llm` eval, and for eval the default trainer
 * when it declares eval). The one defaulting rule: the control plane resolves specs with it
 * (resolveRunSpec) and the worker names the engines it builds with it. */
export function defaultedEndpoints(spec: RunSpec, config: OperatorConfig): RunSpec['endpoints'] {
  const defaults = config.defaults;
  // Operator defaults fill endpoints the kind uses; rewardModel is optional (grpo/eval only).
  const uses = (key: EndpointKey) =>
    REQUIRED_ENDPOINTS[spec.kind].includes(key) ||
    usesOptionalEndpoint(spec.kind, key) ||
    (key === 'judge' && gradesWithJudge(spec));
  const endpoints: RunSpec['endpoints'] = { ...spec.endpoints };
  for (const key of Object.keys(SECTION_OF) as EndpointKey[]) {
    const fallback = uses(key) ? defaults[key] : undefined;
    if (endpoints[key] === undefined && fallback !== undefined) endpoints[key] = fallback;
  }
  // eval exports weights it has no sampler export for (a base model) through a trainer: the
  // operator default trainer is used when it declares eval.
  const evalTrainer =
    defaults.trainer === undefined ? undefined : config.trainers[defaults.trainer];
  if (
    spec.kind === 'eval' &&
    endpoints.trainer === undefined &&
    evalTrainer?.capabilities.kinds.includes('eval')
  ) {
    endpoints.trainer = defaults.trainer;
  }
  return endpoints;
}

/** Fills operator defaults into `spec` and checks every named resource exists and fits. */
export function resolveRunSpec(
  spec: RunSpec,
  config: OperatorConfig,
  facts: DatasetFacts = {},
): Parsed<ResolvedRunSpec> & { errors?: ResolveIssue[] } {
  const defaults = config.defaults;
  const endpoints = defaultedEndpoints(spec, config);
  const pool = spec.pool ?? defaults.pool;
  const model = spec.model ?? (defaults.baseModel ? { base: defaults.baseModel } : undefined);
  // Training kinds keep checkpoints by the spec's retention over the operator defaults; a
  // default keepBest on a metric this kind does not record does not apply to it (the spec's own
  // was checked by validateRunSpec).
  const retention =
    spec.kind === 'eval'
      ? {}
      : mergeRetention(spec.checkpointRetention, defaults.checkpointRetention);
  if (
    spec.kind !== 'eval' &&
    retention.keepBest &&
    !kindRecordKeys(spec.kind).has(retention.keepBest.metric)
  ) {
    delete retention.keepBest;
  }
  const resolved = {
    ...spec,
    endpoints,
    pool,
    model,
    ...(Object.keys(retention).length > 0 && { checkpointRetention: retention }),
  } as ResolvedRunSpec;

  const issues: ResolveIssue[] = [];
  const pools = Object.keys(config.pools);
  if (pool === undefined) {
    issues.push({
      path: '/pool',
      message: `no pool given and the operator config has no default (declared: ${declared(pools)})`,
      reason: 'missing',
    });
  } else if (!pools.includes(pool)) {
    issues.push({
      path: '/pool',
      message: `unknown pool '${pool}' (declared: ${declared(pools)})`,
      reason: 'unknown',
    });
  }
  const bases = Object.keys(config.baseModels);
  if (model === undefined) {
    issues.push({
      path: '/model',
      message: `no model given and the operator config has no default base model (declared: ${declared(bases)})`,
      reason: 'missing',
    });
  } else if (model.base !== undefined && !bases.includes(model.base)) {
    issues.push({
      path: '/model/base',
      message: `unknown base model '${model.base}' (declared: ${declared(bases)})`,
      reason: 'unknown',
    });
  }
  if (spec.kind === 'eval') {
    spec.models?.forEach((ref, i) => {
      if (ref.base !== undefined && !bases.includes(ref.base)) {
        issues.push({
          path: joinPointer('models', i, 'base'),
          message: `unknown base model '${ref.base}' (declared: ${declared(bases)})`,
          reason: 'unknown',
        });
      }
    });
  }
  issues.push(...endpointIssues(resolved, config), ...capabilityIssues(resolved, config));
  issues.push(...evalTrainerIssues(resolved, config));
  issues.push(
    ...samplingIssues(resolved, config),
    ...vllmIssues(resolved, config),
    ...ownSamplerIssues(resolved, config),
  );
  issues.push(...chatFormatIssues(resolved, config));
  issues.push(
    ...datasetIssues(resolved, config).map((i) => ({ ...i, reason: 'unknown' as const })),
  );
  issues.push(...judgeIssues(resolved, config, facts), ...evalJudgeIssues(resolved, config));
  return issues.length > 0 ? { ok: false, errors: issues } : { ok: true, value: resolved };
}
