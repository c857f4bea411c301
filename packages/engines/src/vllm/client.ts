/**
 * vLLM inference engine: token-in/token-out rollouts through `POST /v1/completions`.
 *
 * Works with vLLM v0.11.x and with current main (OpenAI-compatible server; `return_token_ids`
 * from v0.10.2), and stays compatible with older servers (>= v0.8: `return_tokens_as_token_ids`,
 * the old error envelope, explicit nulls). Differences between generations that matter here
 * (`load_inplace`, adapter-load status codes, context-overflow wording) are handled in
 * weight-sync.ts and errors.ts. Run vLLM with `--logprobs-mode processed_logprobs` so sampling
 * logprobs match the sampled distribution (docs/engines.md), and with `--enable-lora`,
 * `--max-lora-rank` >= the runs' LoRA rank and `VLLM_ALLOW_RUNTIME_LORA_UPDATING=True` for
 * weight sync (no dev mode).
 */
import { rm } from 'node:fs/promises';
import { AdapterError } from '../adapters/errors.ts';
import { prepareSamplerWeights } from '../adapters/prepare.ts';
import { ENGINE_ERROR_CODES, EngineError } from '../http/errors.ts';
import type { EngineErrorContext } from '../http/errors.ts';
import { isObject } from '../http/request.ts';
import type { HttpReply } from '../http/request.ts';
import { linkSignals, realScheduler, realTimers, seededRng } from '../http/timing.ts';
import type { Rng, Scheduler, Timers } from '../http/timing.ts';
import type {
  InferenceEngine,
  ReleaseOptions,
  SampleRequest,
  SampledSequence,
  SamplerWeights,
} from '../types.ts';
import { resolveVllmConfig } from './config.ts';
import { vllmRankIssue, vllmWeightsFormatIssue } from './endpoint-checks.ts';
import type { ResolvedVllmConfig, VllmEndpointConfig } from './config.ts';
import { ContextWindow, contextLimitOf } from './context-window.ts';
import { isContextOverflow } from './errors.ts';
import { LACKS_TOKEN_IDS, parseCompletion, parseCompletionReply } from './parse.ts';
import { ReplyReaders } from './reply-readers.ts';
import type { ReplyReaderStats } from './reply-readers.ts';
import { checkReplyModel } from './reply-model.ts';
import type { ReplicaSnapshot } from './replicas.ts';
import { VllmTransport } from './transport.ts';
import type { VllmEvent } from './transport.ts';
import { validateSampleRequest } from './validate.ts';
import { AdapterRegistry } from './weight-sync.ts';
import type { AdapterLease, AdapterSnapshot } from './weight-sync.ts';
import type { CompletionRequest, DetokenizeRequest, TokenizeRequest } from './wire.ts';

export const COMPLETIONS_ROUTE = '/v1/completions';

export interface VllmDeps {
  timers?: Timers;
  scheduler?: Scheduler;
  rng?: Rng;
  /** The id in this engine's adapter names (`<name>@<instance>.<version>`); default: drawn at
   * random (weight-sync.ts `newAdapterInstance`). Tests pass a fixed one. */
  adapterInstance?: string;
  onEvent?: (event: VllmEvent) => void;
}

export interface VllmStats {
  replicas: ReplicaSnapshot[];
  inFlight: number;
  queued: number;
  /** Completion replies read so far by the reply-reader threads, and read on the event loop
   * instead (no thread alive, or not in shared memory); null without threads. */
  readers: ReplyReaderStats | null;
}

export class VllmInferenceEngine implements InferenceEngine {
  readonly config: ResolvedVllmConfig;
  private readonly transport: VllmTransport;
  private readonly adapters: AdapterRegistry;
  private readonly window: ContextWindow;
  private readonly lifetime = new AbortController();
  private readonly healthTimer: { cancel(): void } | undefined;
  private healthRun: Promise<void> | undefined;
  /** A reply without `logprobs` carried no `token_ids` (vLLM < 0.10.2): always ask for them. */
  private lacksTokenIds = false;
  /** The endpoint's reply-reader threads (`readerThreads` > 0). */
  private readonly readers: ReplyReaders | undefined;
  private readonly emit: (event: VllmEvent) => void;

  constructor(config: VllmEndpointConfig, deps: VllmDeps = {}) {
    this.config = resolveVllmConfig(config);
    this.emit = deps.onEvent ?? (() => {});
    const rng = deps.rng ?? seededRng(this.config.jitterSeed);
    this.transport = new VllmTransport(this.config, deps.timers ?? realTimers, rng, this.emit, () =>
      this.checkHealth().then(() => undefined),
    );
    this.adapters = new AdapterRegistry(this.transport, this.emit, deps.adapterInstance);
    this.window = new ContextWindow(this.transport, this.config.maxModelLen);
    this.readers =
      this.config.readerThreads > 0
        ? new ReplyReaders(this.config.readerThreads, this.config.name)
        : undefined;
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
    // Pinned now: this request samples from the adapter version current at its start, even if
    // a newer one is loaded before it is sent (or retried).
    const lease = this.adapters.lease(request.model ?? this.config.model);
    try {
      const first = room(
        this.window.isSettled ? this.window.current : await this.window.get(signal),
      );
      if (first < 1) return overflow();
      const reply = await this.complete(request, first, signal, lease);
      if (!('overflowLimit' in reply)) return reply;
      if (reply.overflowLimit === undefined) return overflow();
      this.window.learn(reply.overflowLimit);
      const retry = room(reply.overflowLimit);
      if (retry < 1 || retry >= first) return overflow();
      const again = await this.complete(request, retry, signal, lease);
      return 'overflowLimit' in again ? overflow() : again;
    } finally {
      lease?.release();
    }
  }

  /** One /v1/completions exchange; a context overflow comes back as the limit vLLM named. A
   * request that does not need the sampling logprobs (`logprobs: false`) is sent without them —
   * each choice is then its `token_ids` and `text`, about 11 bytes a token against ~70 — unless
   * this server was found to be older than `token_ids` (v0.10.2): there the ids come only with the
   * logprobs, so the request is sent once more with them (the same seed samples the same). */
  private async complete(
    request: SampleRequest,
    maxTokens: number,
    signal: AbortSignal | undefined,
    lease: AdapterLease | undefined,
  ): Promise<SampledSequence[] | { overflowLimit: number | undefined }> {
    const withLogprobs = request.logprobs !== false || this.lacksTokenIds;
    const body: CompletionRequest = {
      model: lease?.adapter ?? request.model ?? this.config.model,
      prompt: [...request.prompt],
      n: request.n,
      max_tokens: maxTokens,
      temperature: request.temperature,
      top_p: request.topP,
      // Neutral values, explicitly: left out, vLLM takes them from the model's
      // generation_config.json (entrypoints/openai/completion/protocol.py to_sampling_params).
      top_k: -1,
      min_p: 0,
      repetition_penalty: 1,
      ...(request.seed === undefined ? {} : { seed: request.seed }),
      ...(request.stopTokenIds ? { stop_token_ids: [...request.stopTokenIds] } : {}),
      ...(withLogprobs && { logprobs: 0 }),
      return_token_ids: true,
      return_tokens_as_token_ids: true,
      skip_special_tokens: false,
      ...(this.config.schedulingPolicy === 'priority' &&
        request.priority !== undefined && { priority: request.priority }),
    };
    const linked = linkSignals(signal, this.lifetime.signal);
    let reply: SampledSequence[] | { overflowLimit: number | undefined } | typeof LACKS_TOKEN_IDS;
    try {
      reply = await this.transport.routed<
        SampledSequence[] | { overflowLimit: number | undefined } | typeof LACKS_TOKEN_IDS
      >(
        COMPLETIONS_ROUTE,
        body,
        {
          signal: linked.signal,
          timeoutMs: this.config.requestTimeoutMs,
          ...(lease && { eligible: (replica) => lease.servedBy(replica.url) }),
          onErrorReply: (reply) =>
            isContextOverflow(reply) ? { overflowLimit: contextLimitOf(reply) } : undefined,
        },
        (reply, replica) => {
          const context = this.transport.context(replica.url, COMPLETIONS_ROUTE);
          checkReplyModel(reply, body.model, context);
          return this.readCompletion(reply, request.n, context, withLogprobs);
        },
      );
    } finally {
      linked.dispose();
    }
    if (reply !== LACKS_TOKEN_IDS) return reply;
    this.lacksTokenIds = true;
    return this.complete(request, maxTokens, signal, lease);
  }

  /** Weight sync (docs/engines.md "Weight sync"): resolves the path, unpacks an archive and
   * checks the adapter when this process can see it, then loads it on every admitted replica
   * as the next version of `weights.name` and resets each prefix cache. New requests for the
   * name use it once every replica has it; the previous version is unloaded when its requests
   * finish. Replicas that are down are dropped and get it on re-admission; weights a healthy
   * server refuses fail with ANNEAL_ERR_ENGINE_BAD_ADAPTER. */
  async loadWeights(weights: SamplerWeights): Promise<void> {
    if (!weights.name)
      throw new TypeError(`vLLM endpoint '${this.config.name}': weights.name is empty`);
    const { path, files } = await this.preparedPath(weights);
    const targets = async () => {
      let admitted = this.transport.pool.replicas.filter((r) => r.healthy);
      if (admitted.length === 0) {
        await this.adapters.checkHealth({ inSync: true });
        admitted = this.transport.pool.replicas.filter((r) => r.healthy);
      }
      return admitted;
    };
    const removeFiles =
      files.length === 0
        ? undefined
        : () =>
            Promise.all(files.map((f) => rm(f, { recursive: true, force: true }))).then(() => {});
    await this.adapters.sync(weights.name, path, targets, removeFiles, weights.shared === true);
  }

  /** The directory to load: resolved, unpacked from `<path>.tar.gz` when that is what the
   * trainer wrote, and refused early when it cannot load as a LoRA adapter here. `files`: what
   * this worker made for the server (the directory unpacked beside an archive, a download), to
   * remove once no replica lists the version; the trainer's own archive is its retention's. */
  private async preparedPath(weights: SamplerWeights): Promise<{ path: string; files: string[] }> {
    const resolved = this.config.resolveLoraPath(weights);
    if (!this.config.prepareWeights) return { path: resolved, files: [] };
    const context = { engine: 'vLLM' as const, endpoint: this.config.name };
    const refuse = (detail: string, cause?: unknown) =>
      new EngineError(
        ENGINE_ERROR_CODES.badAdapter,
        context,
        `weights '${weights.name}' (${weights.path}): ${detail}`,
        { cause },
      );
    let prepared;
    try {
      prepared = await prepareSamplerWeights(resolved, { limits: this.config.archiveLimits });
    } catch (error) {
      if (error instanceof AdapterError) throw refuse(error.message, error);
      throw error;
    }
    const endpoint = { name: this.config.name, maxLoraRank: this.config.maxLoraRank };
    const issue =
      prepared.kind === 'full'
        ? vllmWeightsFormatIssue(endpoint, 'full')
        : prepared.rank === undefined
          ? undefined
          : vllmRankIssue(endpoint, prepared.rank);
    if (issue !== undefined) throw refuse(`${prepared.dir}: ${issue}`);
    // What this worker made: a directory it unpacked, and a download (archive and directory, which
    // the download may have unpacked already: hosted Tinker's exports arrive checked and unpacked).
    const files = prepared.archive === undefined && !weights.downloaded ? [] : [prepared.dir];
    if (weights.downloaded) files.push(prepared.archive ?? `${prepared.dir}.tar.gz`);
    return { path: prepared.dir, files };
  }

  /** Stops serving `name` (every version): `/v1/unload_lora_adapter` on every admitted replica
   * once its in-flight requests finish; replicas out of rotation unload it when they return.
   * Unknown names are fine. `keepLoaded`: forgotten here, left on the servers; `shared`: a
   * shared adapter, unloaded wherever a replica lists it. */
  async releaseWeights(name: string, options: ReleaseOptions = {}): Promise<void> {
    if (options.keepLoaded) await this.adapters.forget(name);
    else await this.adapters.release(name, { shared: options.shared === true });
  }

  /** The id in this engine's adapter names. */
  get adapterInstance(): string {
    return this.adapters.instance;
  }

  /** Adapter versions per name: the current one and those still draining. */
  adapterState(): AdapterSnapshot[] {
    return this.adapters.snapshot();
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
    return {
      replicas: pool.snapshot(),
      inFlight: limiter.inFlight,
      queued: limiter.queued,
      readers: this.readers?.stats() ?? null,
    };
  }

  /** Stops health checks, aborts requests in flight and ends the reply-reader threads. */
  async close(): Promise<void> {
    this.healthTimer?.cancel();
    this.lifetime.abort(new Error(`vLLM endpoint '${this.config.name}' is closed`));
    await this.healthRun?.catch(() => undefined);
    await this.readers?.close();
  }

  /** A 2xx completion reply's sequences: read by a reply-reader thread when the endpoint has
   * them (`readerThreads`), else (or when no thread took it) on this thread. */
  private async readCompletion(
    reply: HttpReply,
    choices: number,
    context: EngineErrorContext,
    withLogprobs: boolean,
  ): Promise<SampledSequence[] | typeof LACKS_TOKEN_IDS> {
    if (this.readers !== undefined && reply.bytes !== undefined) {
      const read = await this.readers.read(reply.bytes, choices, withLogprobs);
      if (read.kind === 'read') return read.sequences;
      if (read.kind === 'generic')
        return parseCompletion(reply.json, choices, context, withLogprobs);
    }
    return parseCompletionReply(reply, choices, context, withLogprobs);
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
