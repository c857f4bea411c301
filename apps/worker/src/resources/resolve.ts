// RunResources from a run's named endpoints + the operator config (or the local-mode config):
// vLLM -> the vLLM client, tinker -> the Tinker client, embedded -> the embedded engines,
// reward models -> a RewardScorer, search -> a backend; the base model's tokenizer and chat
// format (markers or its own template, tokenizers.ts). Engines are cached per endpoint name.
import {
  checkRunSupported,
  fetchSamplerWeights,
  type InferenceEngine,
  type RewardScorer,
  type Tokenizer,
  type TrainerEngine,
} from '@anneal/engines';
import {
  type ChatFormat,
  LlmJudge,
  LocalCorpusBackend,
  type RubricJudge,
  type SearchBackend,
} from '@anneal/envs';
import { type OperatorConfig, type RunSpec, defaultedEndpoints } from '@anneal/protocol';
import { type StoreContext, engineArtifactDir, getRun } from '@anneal/store';
import type { Logger, TelemetryEmitter } from '@anneal/telemetry';
import type { WorkerConfig } from '../config.ts';
import { RunSetupError } from '../errors.ts';
import type { ResolvedModel, RunResources } from '../executors/types.ts';
import { loadCorpus } from './corpus.ts';
import { RegisteredDatasets } from './datasets.ts';
import {
  FleetShare,
  fairShareInference,
  prioritizedInference,
  vllmPriorityOf,
} from './fair-share.ts';
import { withDownloadedSamplerWeights } from './hosted-weights.ts';
import type { EngineCache } from './engine-cache.ts';
import type { EngineFactories } from './factories.ts';
import {
  engineEventSinks,
  instrumentInference,
  instrumentJudge,
  instrumentRewardScorer,
  instrumentSearch,
  instrumentTrainer,
} from './instrument.ts';
import { resolveModel } from './model-ref.ts';
import { readRunOutcome } from './run-outcome.ts';
import { type TokenizerSource, chatFormatLoader, toolMarkersOf } from './tokenizers.ts';
import { vllmEndpointConfig } from './vllm-config.ts';
import { missingInference, missingTrainer } from './unavailable.ts';

export interface ResolverDeps {
  store: StoreContext;
  config: Readonly<WorkerConfig>;
  factories: EngineFactories;
  cache: EngineCache;
  telemetry: TelemetryEmitter;
  logger: Logger;
}

type Section = 'inference' | 'trainers' | 'search' | 'rewardModels' | 'judges';

function entryOf<S extends Section>(
  config: OperatorConfig,
  section: S,
  name: string,
  field: string,
): OperatorConfig[S][string] {
  const entry = config[section][name];
  if (entry === undefined) {
    const declared = Object.keys(config[section]).join(', ') || 'none';
    throw new RunSetupError(
      `${field}: unknown ${section} endpoint '${name}' (declared: ${declared})`,
    );
  }
  return entry as OperatorConfig[S][string];
}

/** Operator-config future settings (seconds) -> the Tinker client's poll policy (ms). */
function tinkerFuturePoll(entry: {
  pollTimeoutSeconds?: number;
  operationDeadlineSeconds?: number;
}): { callTimeoutMs?: number; deadlineMs?: number } {
  return {
    ...(entry.pollTimeoutSeconds !== undefined && {
      callTimeoutMs: entry.pollTimeoutSeconds * 1000,
    }),
    ...(entry.operationDeadlineSeconds !== undefined && {
      deadlineMs: entry.operationDeadlineSeconds * 1000,
    }),
  };
}

/** A chat-template base model trains only on registered sft datasets (rendered from their
 * `turns`); rm runs and other sft sources are refused, naming the field. */
function checkTemplateData(
  spec: RunSpec,
  config: OperatorConfig,
  source: TokenizerSource | undefined,
): void {
  const base = `base model '${source?.baseModel ?? '?'}' has chatFormat {type: template}`;
  if (spec.kind === 'rm') {
    throw new RunSetupError(
      `/model: ${base}; rm runs train on preference pairs in the marker format, which its ` +
        'chat template does not render',
    );
  }
  if (spec.kind !== 'sft') return;
  spec.data.mix.forEach(({ source: name }, i) => {
    if (config.datasets[name]?.kind === 'sft') return;
    throw new RunSetupError(
      `/data/mix/${i}/source: ${base}; '${name}' is not a registered sft dataset (the ` +
        "built-in tasks are the embedded model's tokens): register one written as turns",
    );
  });
}

/** Artifact directories of the operator config's embedded trainer endpoints. */
export function embeddedTrainerDirs(config: Readonly<WorkerConfig>): string[] {
  return Object.entries(config.operatorConfig.trainers)
    .filter(([, entry]) => entry.type === 'embedded')
    .map(([name]) => engineArtifactDir(config.artifactDir, name));
}

export class ResourceResolver {
  private readonly sinks;
  private readonly datasets: RegisteredDatasets;
  /** Chat templates are read once per file for every run of this worker. */
  private readonly chatFormats = chatFormatLoader();

  constructor(private readonly deps: ResolverDeps) {
    this.sinks = engineEventSinks(deps.telemetry, deps.logger);
    this.datasets = new RegisteredDatasets(deps.config.operatorConfig);
  }

  /**
   * The base model's chat format given the run's search_web limits, built once now so a bad
   * template fails the run at set-up. A model talking in its own template trains only on data
   * its template renders: registered sft datasets written as `turns` (packages/envs
   * `chat-template/sftTokens.ts`). The built-in tasks are the embedded byte model's tokens and
   * preference pairs are marker-format text, so rm runs and built-in sft sources are refused
   * here (the control plane refuses them at submission when `model` names the base).
   */
  private chatFormatOf(
    spec: RunSpec,
    tokenizer: Tokenizer,
    source: TokenizerSource | undefined,
  ): { chatFormat: NonNullable<RunResources['chatFormat']>; format: ChatFormat } {
    const load = this.chatFormats;
    const format = load(tokenizer, source);
    if (format.kind === 'template')
      checkTemplateData(spec, this.deps.config.operatorConfig, source);
    return {
      format,
      chatFormat:
        format.kind === 'markers' ? () => format : (tool) => load(tokenizer, source, tool),
    };
  }

  /** Context window of a model talking in its own chat template: the built-in catalogue's
   * 256 tokens are the embedded byte model's, so the vLLM endpoint's `maxModelLen` applies,
   * else none (the vLLM client clamps to the window the server reports). */
  private templateContextWindow(inferenceName: string | undefined): number {
    const entry =
      inferenceName === undefined
        ? undefined
        : this.deps.config.operatorConfig.inference[inferenceName];
    return entry?.type === 'vllm' && entry.maxModelLen !== undefined
      ? entry.maxModelLen
      : Number.MAX_SAFE_INTEGER;
  }

  async resolve(run: { id: string; tenant: string; spec: RunSpec }): Promise<RunResources> {
    const { config, store, factories } = this.deps;
    const operator = config.operatorConfig;
    const spec = run.spec;
    const model = await resolveModel(store, operator, spec.model, run.tenant);
    const endpoints = defaultedEndpoints(spec, operator);
    const inferenceName = endpoints.inference;
    const trainerName = endpoints.trainer;
    const rewardName = endpoints.rewardModel;
    const searchName = endpoints.search;
    const judgeName = endpoints.judge;
    const source = model.tokenizerSource;
    const tokenizer = factories.tokenizer(model.tokenizer, source);
    const toolMarkers = source && toolMarkersOf(tokenizer, source);
    const { chatFormat, format } = this.chatFormatOf(spec, tokenizer, source);
    const [inference, trainer, rewardScorer, search, data, evalModels] = await Promise.all([
      inferenceName ? this.inference(inferenceName, model) : missingInference(spec.kind),
      trainerName ? this.trainer(trainerName, spec.kind) : missingTrainer(spec.kind),
      rewardName ? this.rewardModel(rewardName, run.tenant) : undefined,
      searchName ? this.search(searchName) : undefined,
      this.datasets.catalogFor(spec, tokenizer, toolMarkers, format),
      spec.kind === 'eval' && spec.models
        ? Promise.all(
            spec.models.map((ref, i) =>
              resolveModel(store, operator, ref, run.tenant, `/models/${i}`),
            ),
          )
        : undefined,
    ]);
    const judge = judgeName ? this.judge(judgeName) : undefined;
    const served = await this.fairShare(
      this.pairHostedTraining(inference, inferenceName, trainerName),
      inferenceName,
      run,
    );
    const ownSampler = this.ownSampler(inferenceName, trainerName);
    return {
      ...(ownSampler && { ownSampler }),
      tokenizer,
      ...(toolMarkers && { toolMarkers }),
      chatFormat,
      ...(format.kind === 'template' && {
        maxContextTokens: this.templateContextWindow(inferenceName),
      }),
      inference: served,
      trainer,
      model,
      ...(evalModels && { evalModels }),
      ...(rewardScorer && { rewardScorer }),
      ...(search && { search }),
      ...(data && { data }),
      ...(judge && { judge }),
      ledger: this.deps.config.operatorConfig.ledger,
    };
  }

  /** A run's requests to a vLLM endpoint that declares `maxNumSeqs` go through its fair share
   * of the endpoint (fair-share.ts), and carry the run's priority where the endpoint schedules
   * by priority (docs/operations.md "Fair share of an endpoint"). */
  private async fairShare(
    inference: InferenceEngine,
    inferenceName: string | undefined,
    run: { id: string; tenant: string; spec: RunSpec },
  ): Promise<InferenceEngine> {
    const { config, cache, store, telemetry } = this.deps;
    const operator = config.operatorConfig;
    const entry = inferenceName === undefined ? undefined : operator.inference[inferenceName];
    if (entry?.type !== 'vllm' || inferenceName === undefined) return inference;
    const priority = vllmPriorityOf(run.spec.priority);
    if (entry.maxNumSeqs === undefined) {
      return entry.schedulingPolicy === 'priority'
        ? prioritizedInference(inference, priority)
        : inference;
    }
    const capacity = entry.maxNumSeqs * entry.replicas.length;
    const share = await cache.get(
      `fair-share:${inferenceName}`,
      () => new FleetShare(store, inferenceName, capacity),
    );
    const weight = operator.tenants[run.tenant]?.weight ?? 1;
    return fairShareInference(inference, share, { id: run.id, weight, priority }, (served) =>
      telemetry.emit('fleet:served', served),
    );
  }

  /** The trainer's own sampler: an inference endpoint of `type: tinker` next to a Tinker-compatible
   * trainer (the sampled `tinker://` exports live on that trainer's server). */
  private ownSampler(
    inferenceName: string | undefined,
    trainerName: string | undefined,
  ): RunResources['ownSampler'] {
    const operator = this.deps.config.operatorConfig;
    const trainer = trainerName === undefined ? undefined : operator.trainers[trainerName];
    const endpoint = inferenceName === undefined ? undefined : operator.inference[inferenceName];
    if (endpoint?.type !== 'tinker' || trainer?.type !== 'tinker') return undefined;
    return { backend: trainer.backend };
  }

  /** A hosted Tinker trainer paired with a vLLM endpoint: its exports are downloaded into the
   * endpoint's adapter storage before each load (hosted-weights.ts). */
  private pairHostedTraining(
    inference: InferenceEngine,
    inferenceName: string | undefined,
    trainerName: string | undefined,
  ): InferenceEngine {
    const operator = this.deps.config.operatorConfig;
    const trainer = trainerName === undefined ? undefined : operator.trainers[trainerName];
    const endpoint = inferenceName === undefined ? undefined : operator.inference[inferenceName];
    if (trainer?.type !== 'tinker' || trainer.backend !== 'tinker' || endpoint?.type !== 'vllm') {
      return inference;
    }
    const root = endpoint.adapters?.root;
    if (root === undefined) {
      throw new RunSetupError(
        `/endpoints/inference: vLLM endpoint '${inferenceName}' has no adapters.root, where the ` +
          `exports of hosted Tinker trainer '${trainerName}' are downloaded for its replicas`,
      );
    }
    const connection = {
      name: trainerName!,
      baseUrl: trainer.url,
      ...(trainer.apiKeyEnv && { apiKey: this.deps.config.secrets[trainer.apiKeyEnv] }),
      futurePoll: tinkerFuturePoll(trainer),
    };
    // Unpacked and checked here: the archive's checkpoint_complete, tensors vLLM can load, and
    // an adapter_config.json stating them (@anneal/engines fetchSamplerWeights).
    return withDownloadedSamplerWeights(inference, async (samplerPath) => {
      const prepared = await fetchSamplerWeights(connection, samplerPath, root, {
        backend: 'tinker',
      });
      return prepared.dir;
    });
  }

  private judge(name: string): RubricJudge {
    const { config, telemetry } = this.deps;
    const entry = entryOf(config.operatorConfig, 'judges', name, '/endpoints/judge');
    const judge = new LlmJudge(name, {
      baseUrl: entry.url,
      model: entry.model,
      ...(entry.apiKeyEnv && { apiKey: config.secrets[entry.apiKeyEnv] }),
      ...(entry.maxTokens !== undefined && { maxTokens: entry.maxTokens }),
      ...(entry.timeoutSeconds !== undefined && { timeoutMs: entry.timeoutSeconds * 1000 }),
    });
    return instrumentJudge(judge, telemetry);
  }

  private engineDir(name: string): string {
    return engineArtifactDir(this.deps.config.artifactDir, name);
  }

  private inference(name: string, model: ResolvedModel): Promise<InferenceEngine> {
    const { config, factories, cache, telemetry } = this.deps;
    const entry = entryOf(config.operatorConfig, 'inference', name, '/endpoints/inference');
    return cache.get(`inference:${name}`, async () => {
      const engine =
        entry.type === 'vllm'
          ? factories.vllm(vllmEndpointConfig(name, entry, model, config), this.sinks.vllm)
          : entry.type === 'tinker'
            ? await factories.tinkerSampler(
                {
                  name,
                  baseUrl: entry.url,
                  baseModel: model.baseModel,
                  ...(entry.apiKeyEnv && { apiKey: config.secrets[entry.apiKeyEnv] }),
                  futurePoll: tinkerFuturePoll(entry),
                },
                this.sinks.tinker,
              )
            : await factories.embedded.inference({ name, artifactDir: this.engineDir(name) });
      return instrumentInference(engine, telemetry);
    });
  }

  private trainer(name: string, kind: RunSpec['kind']): Promise<TrainerEngine> {
    const { config, factories, cache, telemetry } = this.deps;
    const entry = entryOf(config.operatorConfig, 'trainers', name, '/endpoints/trainer');
    const unsupported = checkRunSupported(entry.capabilities, kind, name);
    if (unsupported) throw new RunSetupError(`/endpoints/trainer: ${unsupported}`);
    return cache.get(`trainer:${name}`, async () => {
      const engine =
        entry.type === 'tinker'
          ? await factories.tinker(
              {
                name,
                baseUrl: entry.url,
                capabilities: {
                  ...entry.capabilities,
                  ...(entry.backend && { backend: entry.backend }),
                },
                ...(entry.apiKeyEnv && { apiKey: config.secrets[entry.apiKeyEnv] }),
                futurePoll: tinkerFuturePoll(entry),
              },
              this.sinks.tinker,
            )
          : await factories.embedded.trainer({
              name,
              capabilities: { ...entry.capabilities, backend: 'embedded' },
              artifactDir: this.engineDir(name),
              onEvent: this.sinks.tinker,
            });
      return instrumentTrainer(engine, telemetry);
    });
  }

  private async rewardModel(name: string, tenant: string): Promise<RewardScorer> {
    const { config, factories, cache, telemetry, store } = this.deps;
    const entry = entryOf(config.operatorConfig, 'rewardModels', name, '/endpoints/rewardModel');
    let source;
    if (entry.type === 'onnx') {
      source = { name, path: entry.path, executionProvider: entry.executionProvider };
    } else {
      const rm = await getRun(store, entry.run, { tenant });
      const path =
        rm && ((await readRunOutcome(store, rm.id)).finalCheckpoint ?? rm.checkpoint?.path);
      if (!rm || rm.state !== 'succeeded' || !path) {
        throw new RunSetupError(
          `reward model '${name}': rm run ${entry.run} ${rm ? `is ${rm.state}` : 'does not exist'}` +
            (path ? '' : ' without a final checkpoint') +
            '; it must have succeeded with one',
        );
      }
      source = { name, path, executionProvider: 'cpu' as const, fromRun: rm.id };
    }
    return cache.get(`reward:${name}:${source.path}`, async () =>
      instrumentRewardScorer(await factories.rewardModel(source), telemetry),
    );
  }

  private async search(name: string): Promise<SearchBackend | undefined> {
    const entry = entryOf(this.deps.config.operatorConfig, 'search', name, '/endpoints/search');
    const { factories, telemetry } = this.deps;
    if (entry.type === 'searxng')
      return instrumentSearch(factories.searxng(name, entry.url), telemetry);
    // A local backend without a corpus file is the built-in tasks' corpus (executors own it).
    if (entry.corpus === undefined) return undefined;
    const local = new LocalCorpusBackend(name, await loadCorpus(entry.corpus, name));
    return instrumentSearch(local, telemetry);
  }

  /** Closes every engine created for any run (shutdown). */
  close(): Promise<unknown[]> {
    return this.deps.cache.closeAll();
  }
}
