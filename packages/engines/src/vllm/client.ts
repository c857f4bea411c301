/**
 * vLLM inference engine: token-in/token-out rollouts through `POST /v1/completions`.
 *
 * Targets vLLM v0.11.x (OpenAI-compatible server; `return_token_ids` from v0.10.2), and
 * stays compatible with older servers (>= v0.8: `return_tokens_as_token_ids`, the old error
 * envelope, explicit nulls). Run vLLM with `--logprobs-mode processed_logprobs` so sampling
 * logprobs match the sampled distribution (docs/engines.md), and with `--enable-lora`,
 * `VLLM_ALLOW_RUNTIME_LORA_UPDATING=True`, `VLLM_SERVER_DEV_MODE=1` for weight sync.
 */
import { ENGINE_ERROR_CODES, EngineError } from '../http/errors.ts';
import { isObject } from '../http/request.ts';
import { linkSignals, realScheduler, realTimers, seededRng } from '../http/timing.ts';
import type { Rng, Scheduler, Timers } from '../http/timing.ts';
import type { InferenceEngine, SampleRequest, SampledSequence, SamplerWeights } from '../types.ts';
import { resolveVllmConfig } from './config.ts';
import type { ResolvedVllmConfig, VllmEndpointConfig } from './config.ts';
import { ContextWindow, contextLimitOf } from './context-window.ts';
import { isContextOverflow } from './errors.ts';
import { parseCompletion } from './parse.ts';
import type { ReplicaSnapshot } from './replicas.ts';
import { VllmTransport } from './transport.ts';
import type { VllmEvent } from './transport.ts';
import { validateSampleRequest } from './validate.ts';
import { AdapterRegistry } from './weight-sync.ts';
import type { CompletionRequest, DetokenizeRequest, TokenizeRequest } from './wire.ts';

export const COMPLETIONS_ROUTE = '/v1/completions';

export interface VllmDeps {
  timers?: Timers;
  scheduler?: Scheduler;
  rng?: Rng;
  onEvent?: (event: VllmEvent) => void;
}

export interface VllmStats {
  replicas: ReplicaSnapshot[];
  inFlight: number;
  queued: number;
}

export class VllmInferenceEngine implements InferenceEngine {
  readonly config: ResolvedVllmConfig;
  private readonly transport: VllmTransport;
  private readonly adapters: AdapterRegistry;
  private readonly window: ContextWindow;
  private readonly lifetime = new AbortController();
  private readonly healthTimer: { cancel(): void } | undefined;
  private healthRun: Promise<void> | undefined;
  private readonly emit: (event: VllmEvent) => void;

  constructor(config: VllmEndpointConfig, deps: VllmDeps = {}) {
    this.config = resolveVllmConfig(config);
    this.emit = deps.onEvent ?? (() => {});
    const rng = deps.rng ?? seededRng(this.config.jitterSeed);
    this.transport = new VllmTransport(this.config, deps.timers ?? realTimers, rng, this.emit, () =>
      this.checkHealth().then(() => undefined),
    );
    this.adapters = new AdapterRegistry(this.transport, this.emit);
    this.window = new ContextWindow(this.transport, this.config.maxModelLen);
    const interval = this.config.healthCheckIntervalMs;
    this.healthTimer =
      interval > 0
        ? (deps.scheduler ?? realScheduler).every(interval, () => void this.checkHealth())
        : undefined;
  }

  /** Prompt + max_tokens are kept inside the model window (configured, else discovered from
   * GET /v1/models). A 400 "maximum context length is N" (window unknown or smaller) is retried
   * once with max_tokens = N - prompt; a prompt that alone fills the window is a
   * `context_overflow` rollout, never a failed run. */
  async sample(request: SampleRequest, signal?: AbortSignal): Promise<SampledSequence[]> {
    validateSampleRequest(request, this.config.name);
    const overflow = (): SampledSequence[] => {
      this.emitOverflow(request.prompt.length);
      return Array.from({ length: request.n }, () => ({
        tokens: [],
        logprobs: [],
        finishReason: 'context_overflow' as const,
      }));
    };
    const room = (window: number | undefined) =>
      Math.min(request.maxTokens, (window ?? Number.POSITIVE_INFINITY) - request.prompt.length);
    // No await once known: a request queues in the same tick (the in-flight limit sees it).
    const first = room(this.window.isSettled ? this.window.current : await this.window.get(signal));
    if (first < 1) return overflow();
    const reply = await this.complete(request, first, signal);
    if (!('overflowLimit' in reply)) return reply;
    if (reply.overflowLimit === undefined) return overflow();
    this.window.learn(reply.overflowLimit);
    const retry = room(reply.overflowLimit);
    if (retry < 1 || retry >= first) return overflow();
    const again = await this.complete(request, retry, signal);
    return 'overflowLimit' in again ? overflow() : again;
  }

  /** One /v1/completions exchange; a context overflow comes back as the limit vLLM named. */
  private async complete(
    request: SampleRequest,
    maxTokens: number,
    signal: AbortSignal | undefined,
  ): Promise<SampledSequence[] | { overflowLimit: number | undefined }> {
    const body: CompletionRequest = {
      model: request.model ?? this.config.model,
      prompt: [...request.prompt],
      n: request.n,
      max_tokens: maxTokens,
      temperature: request.temperature,
      top_p: request.topP,
      ...(request.seed === undefined ? {} : { seed: request.seed }),
      ...(request.stopTokenIds ? { stop_token_ids: [...request.stopTokenIds] } : {}),
      logprobs: 0,
      return_token_ids: true,
      return_tokens_as_token_ids: true,
      skip_special_tokens: false,
    };
    const linked = linkSignals(signal, this.lifetime.signal);
    try {
      return await this.transport.routed<SampledSequence[] | { overflowLimit: number | undefined }>(
        COMPLETIONS_ROUTE,
        body,
        {
          signal: linked.signal,
          timeoutMs: this.config.requestTimeoutMs,
          onErrorReply: (reply) =>
            isContextOverflow(reply) ? { overflowLimit: contextLimitOf(reply) } : undefined,
        },
        (reply, replica) =>
          parseCompletion(
            reply.json,
            request.n,
            this.transport.context(replica.url, COMPLETIONS_ROUTE),
          ),
      );
    } finally {
      linked.dispose();
    }
  }

  /** LoRA hot-reload on every admitted replica, then reset each one's prefix cache.
   * Replicas that fail with connection loss / 5xx are dropped and get the adapter when
   * re-admitted; a 4xx (e.g. `--enable-lora` missing) fails the sync. */
  async loadWeights(weights: SamplerWeights): Promise<void> {
    if (!weights.name)
      throw new TypeError(`vLLM endpoint '${this.config.name}': weights.name is empty`);
    const path = this.config.resolveLoraPath(weights);
    this.adapters.set(weights.name, path);
    let targets = this.transport.pool.replicas.filter((r) => r.healthy);
    if (targets.length === 0) {
      await this.checkHealth();
      targets = this.transport.pool.replicas.filter((r) => r.healthy);
    }
    const outcomes = await Promise.allSettled(
      targets.map((replica) => this.adapters.loadOnto(replica, [[weights.name, path]])),
    );
    const errors: unknown[] = [];
    outcomes.forEach((outcome, i) => {
      if (outcome.status === 'fulfilled') return;
      const replica = targets[i];
      const error: unknown = outcome.reason;
      if (replica && error instanceof EngineError && error.retryable) {
        this.transport.dropReplica(replica, error.message); // resynced when re-admitted
      }
      errors.push(error);
    });
    const fatal = errors.find((e) => !(e instanceof EngineError && e.retryable));
    if (fatal !== undefined) throw fatal;
    if (errors.length === targets.length) {
      throw new EngineError(
        ENGINE_ERROR_CODES.noReplica,
        { engine: 'vLLM', endpoint: this.config.name },
        `no replica accepted weights '${weights.name}' (${path}): ` +
          (errors.map((e) => (e instanceof Error ? e.message : String(e))).join('; ') ||
            'no replica is healthy'),
      );
    }
  }

  /** Unloads adapter `name` from every admitted replica (`/v1/unload_lora_adapter`) and stops
   * replaying it onto re-admitted ones; replicas out of rotation unload it when they return.
   * Unknown names and replicas that no longer have it are fine. */
  async releaseWeights(name: string): Promise<void> {
    const admitted = this.transport.pool.replicas.filter((r) => r.healthy);
    const outcomes = await Promise.allSettled(
      admitted.map((replica) => this.adapters.unloadFrom(replica, name)),
    );
    const failed = new Set(admitted.filter((_, i) => outcomes[i]?.status === 'rejected'));
    const unreached = this.transport.pool.replicas.filter((r) => !r.healthy || failed.has(r));
    this.adapters.remove(name, unreached);
    for (const [i, outcome] of outcomes.entries()) {
      const replica = admitted[i];
      if (outcome.status === 'rejected' && replica) {
        const reason: unknown = outcome.reason;
        this.transport.dropReplica(
          replica,
          reason instanceof Error ? reason.message : String(reason),
        );
      }
    }
  }

  /** Probe `/health` on every replica now (also run every `healthCheckIntervalMs`). */
  checkHealth(): Promise<ReplicaSnapshot[]> {
    this.healthRun ??= this.adapters.checkHealth().finally(() => {
      this.healthRun = undefined;
    });
    return this.healthRun.then(() => this.transport.pool.snapshot());
  }

  /** Text -> token ids with the served model's tokenizer (`POST /tokenize`). */
  async tokenize(text: string, options: { addSpecialTokens?: boolean } = {}): Promise<number[]> {
    const body: TokenizeRequest = {
      model: this.config.model,
      prompt: text,
      add_special_tokens: options.addSpecialTokens ?? false,
    };
    return this.auxiliary('/tokenize', body, (json) =>
      isObject(json) && Array.isArray(json['tokens']) && json['tokens'].every(Number.isInteger)
        ? (json['tokens'] as number[])
        : undefined,
    );
  }

  /** Token ids -> text (`POST /detokenize`). */
  async detokenize(tokens: readonly number[]): Promise<string> {
    const body: DetokenizeRequest = { model: this.config.model, tokens: [...tokens] };
    return this.auxiliary('/detokenize', body, (json) =>
      isObject(json) && typeof json['prompt'] === 'string' ? json['prompt'] : undefined,
    );
  }

  stats(): VllmStats {
    const { pool, limiter } = this.transport;
    return { replicas: pool.snapshot(), inFlight: limiter.inFlight, queued: limiter.queued };
  }

  /** Stops health checks and aborts requests in flight. */
  async close(): Promise<void> {
    this.healthTimer?.cancel();
    this.lifetime.abort(new Error(`vLLM endpoint '${this.config.name}' is closed`));
    await this.healthRun?.catch(() => undefined);
  }

  private auxiliary<T>(
    route: string,
    body: unknown,
    read: (json: unknown) => T | undefined,
  ): Promise<T> {
    return this.transport.routed(
      route,
      body,
      { signal: this.lifetime.signal, timeoutMs: this.config.healthTimeoutMs },
      (reply, replica) => {
        const value = read(reply.json);
        if (value !== undefined) return value;
        throw new EngineError(
          ENGINE_ERROR_CODES.response,
          this.transport.context(replica.url, route),
          `malformed reply: ${reply.text.slice(0, 200)}`,
        );
      },
    );
  }

  private emitOverflow(promptTokens: number): void {
    this.emit({
      type: 'rollout:context_overflow',
      endpoint: this.config.name,
      promptTokens,
    });
  }
}
