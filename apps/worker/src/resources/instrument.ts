// Wraps engines so every call is measured as a worker request (in-flight gauge, duration
// histogram, errors) — whatever the engine: vLLM, Tinker, embedded, or a test double.
import type {
  InferenceEngine,
  ReleaseOptions,
  RewardScorer,
  TinkerEvent,
  TrainerEngine,
  TrainerModel,
  VllmEvent,
} from '@anneal/engines';
import type { RubricJudge, SearchBackend } from '@anneal/envs';
import type { EngineName, Logger, Subsystem, TelemetryEmitter } from '@anneal/telemetry';

function isAbort(error: unknown): boolean {
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError');
}

async function timed<T>(
  telemetry: TelemetryEmitter,
  engine: EngineName,
  subsystem: Subsystem,
  call: () => Promise<T>,
): Promise<T> {
  telemetry.emit('request:started', { engine });
  const startedAt = performance.now();
  let outcome: 'ok' | 'error' = 'ok';
  try {
    return await call();
  } catch (error) {
    outcome = 'error';
    // An engine error surfacing here exhausted the client's own bounded retries.
    if (!isAbort(error)) telemetry.emit('attempt:failed', { subsystem, willRetry: false, error });
    throw error;
  } finally {
    const durationSeconds = (performance.now() - startedAt) / 1000;
    telemetry.emit('request:finished', { engine, outcome, durationSeconds });
  }
}

export function instrumentInference(
  engine: InferenceEngine,
  telemetry: TelemetryEmitter,
): InferenceEngine {
  return {
    // Only rollouts sample: a sample that fails after the client's own retries fails a rollout
    // (each retried attempt is counted under `inference` by the vLLM event sink).
    sample: (request, signal) =>
      timed(telemetry, 'inference', 'rollout', () => engine.sample(request, signal)),
    loadWeights: (weights) =>
      timed(telemetry, 'inference', 'inference', () => engine.loadWeights(weights)),
    ...(engine.releaseWeights && {
      releaseWeights: (name: string, options?: ReleaseOptions) =>
        timed(telemetry, 'inference', 'inference', () => engine.releaseWeights!(name, options)),
    }),
    close: () => engine.close(),
  };
}

function instrumentModel(model: TrainerModel, telemetry: TelemetryEmitter): TrainerModel {
  const t = <T>(call: () => Promise<T>) => timed(telemetry, 'trainer', 'trainer', call);
  const remove = model.deleteSamplerWeights?.bind(model);
  const removeWeights = model.deleteWeights?.bind(model);
  const release = model.release?.bind(model);
  return {
    id: model.id,
    forward: (data, lossFn, config) => t(() => model.forward(data, lossFn, config)),
    forwardBackward: (data, lossFn, config) => t(() => model.forwardBackward(data, lossFn, config)),
    optimStep: (params) => t(() => model.optimStep(params)),
    saveWeights: (name) => timed(telemetry, 'trainer', 'checkpoint', () => model.saveWeights(name)),
    loadWeights: (path, options) => t(() => model.loadWeights(path, options)),
    saveWeightsForSampler: (name) => t(() => model.saveWeightsForSampler(name)),
    ...(remove && { deleteSamplerWeights: (path: string) => t(() => remove(path)) }),
    ...(removeWeights && { deleteWeights: (path: string) => t(() => removeWeights(path)) }),
    ...(release && { release: () => t(release) }),
  };
}

export function instrumentTrainer(
  engine: TrainerEngine,
  telemetry: TelemetryEmitter,
): TrainerEngine {
  return {
    capabilities: engine.capabilities,
    createModel: async (options) =>
      instrumentModel(
        await timed(telemetry, 'trainer', 'trainer', () => engine.createModel(options)),
        telemetry,
      ),
    close: () => engine.close(),
  };
}

export function instrumentRewardScorer(
  scorer: RewardScorer,
  telemetry: TelemetryEmitter,
): RewardScorer {
  return {
    score: (pairs) => timed(telemetry, 'reward_model', 'reward', () => scorer.score(pairs)),
    close: () => scorer.close(),
  };
}

/** Engine-internal events: retries count as failed attempts that will be retried. */
export function engineEventSinks(telemetry: TelemetryEmitter, logger: Logger) {
  return {
    vllm(event: VllmEvent): void {
      if (event.type === 'request:retry') {
        telemetry.emit('attempt:failed', {
          subsystem: 'inference',
          willRetry: true,
          error: event.error,
        });
      }
      const level = event.type === 'replica:up' ? 'info' : 'warn';
      logger[level]({ ...event, engine: 'vllm' }, `vllm ${event.type}`);
    },
    tinker(event: TinkerEvent): void {
      if (event.type === 'request:retry' || event.type === 'session:heartbeat_failed') {
        const willRetry = true;
        telemetry.emit('attempt:failed', { subsystem: 'trainer', willRetry, error: event.error });
        logger.warn({ ...event, engine: 'tinker' }, `tinker ${event.type}`);
      } else logger.debug({ ...event, engine: 'tinker' }, `tinker ${event.type}`);
    },
  };
}

/** search_web backends (SearXNG, local corpus): a failed search is a `tool` error. The tool
 * itself turns it into a failed call (e_i, docs/recipe.md §6); the rollout goes on. */
export function instrumentSearch(
  backend: SearchBackend,
  telemetry: TelemetryEmitter,
): SearchBackend {
  return {
    name: backend.name,
    search: (query, limit, signal) =>
      timed(telemetry, 'search', 'tool', () => backend.search(query, limit, signal)),
  };
}

/** The rubric judge: every call measured as a `judge` request, failures as `reward` errors. */
export function instrumentJudge(judge: RubricJudge, telemetry: TelemetryEmitter): RubricJudge {
  return {
    name: judge.name,
    judge: (prompt, response, rubrics, signal) =>
      timed(telemetry, 'judge', 'reward', () => judge.judge(prompt, response, rubrics, signal)),
  };
}
