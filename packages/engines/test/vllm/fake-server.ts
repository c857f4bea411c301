// An in-repo vLLM stand-in over real HTTP (node:http, ephemeral port) for contract tests.
// It validates requests the way vLLM does, answers in the `new` or `old` shapes of
// fixtures.ts, and lets a test script failures: error replies, dropped connections,
// requests held open (timeouts), a dead engine (`/health` 503) or a stopped process.
// `generation` picks which vLLM it mirrors (fixtures.ts `VllmGeneration`):
// - LoRA routes, adapter checks and the engine's LoRA cache (`maxLoras`, `maxCpuLoras`: slots per
//   batch, the CPU LRU, re-reads of evicted adapters, main's unload of an evicted adapter):
//   lora-routes.ts and lora-cache.ts, with the vLLM files and commits they follow. Adapter paths
//   that exist on this machine are read like vLLM reads them; other paths load unless listed in
//   `missingPaths`; `adapterReadMs` is what a read from disk takes, the batch stalled meanwhile;
// - throughput: instant by default; `tokensPerSecond` (one queue), `decodeTokensPerSecond` (a
//   fixed rate per sequence) or `batching` (continuous batching, a step time growing with the
//   batch: batch-decode.ts);
// - prefix cache: vLLM keys cached KV blocks by the LoRA adapter *name*
//   (`vllm/v1/core/kv_cache_utils.py`@001cabc1 `_gen_lora_extra_hash_keys`), and unloading a
//   name does not evict its blocks; `loadHistory` keeps every path each name was loaded with
//   (kept across `stop`/`restart`: the same process) and `staleCacheLoads` each load of a
//   name with a path other than its earlier one (the real server could serve old-weights KV);
// - the waiting queue (`maxNumSeqs`, `schedulingPolicy`: `--max-num-seqs`,
//   `--scheduling-policy`): sched-queue.ts, with the vLLM files and commits it follows;
// - context overflow: fixtures.ts `contextOverflowMessage` (both wordings);
// - `GET /version` (`{"version": …}`), `GET /v1/models` with `max_model_len` on the base card and
//   each adapter's path as its `root`; `GET /metrics` with `vllm:lora_requests_info` when
//   `maxLoras` is set (its labels as `vllm/v1/metrics/loggers.py` writes them).
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  completionResponse,
  completionResponseJson,
  contextOverflowMessage,
  errorBody,
  fakeLogprob,
} from './fixtures.ts';
import type { FixtureChoice, ServerShape, VllmGeneration } from './fixtures.ts';
import { ContinuousBatch } from './batch-decode.ts';
import type { BatchDecodeOptions } from './batch-decode.ts';
import { FakeLoraState } from './lora-routes.ts';
import type { LoraReply } from './lora-routes.ts';
import { FakeScheduler } from './sched-queue.ts';
import type { SchedulingPolicy } from './sched-queue.ts';
import { validateCompletion } from './validate-request.ts';
import type { LogprobsMode } from '@anneal/protocol';
import { firstPositionTop } from '../fake-logprobs-server.ts';

/** How far apart a request's samples start in `sampleFrom` (a prime, so windows rarely meet). */
const SAMPLE_STRIDE = 5003;

export type ScriptedReply =
  /** `body` as a function: built from the request (a completion's reply names the model the
   * request named, as vLLM's does). */
  | { kind: 'reply'; status: number; body: unknown | ((request: never) => unknown) }
  | { kind: 'drop' } // destroy the socket: a connection error
  | { kind: 'hang' }; // never answer (until the client gives up or `close`)

export interface RecordedRequest {
  method: string;
  path: string;
  body: unknown;
  headers: IncomingMessage['headers'];
  /** The status answered (set once the reply is written; undefined for a dropped one). */
  status?: number;
}

export interface FakeVllmOptions {
  shape?: ServerShape;
  /** Which vLLM to mirror (default `current`). */
  generation?: VllmGeneration;
  /** `GET /version` answer (default 0.11.2 / 0.20.1 by generation); null = no such route. */
  version?: string | null;
  /** `--max-lora-rank` (vLLM's default 16). */
  maxLoraRank?: number;
  servedModel?: string;
  apiKey?: string;
  maxModelLen?: number;
  vocabSize?: number;
  /** Ids to "sample" instead of the arithmetic sequence below `vocabSize`: taken in order,
   * cyclically, from a position the prompt and seed decide (benchmarks: a model's output, e.g.
   * prose as the served model's tokenizer encodes it). */
  sampleFrom?: readonly number[];
  /** Generate this many tokens then the first stop token id (finish `stop`), if any given. */
  stopAfter?: number;
  /** `VLLM_SERVER_DEV_MODE` (default off): registers the dev routes (/reset_prefix_cache,
   * /collective_rpc, /sleep, /wake_up, /is_sleeping; vllm/entrypoints/openai/api_server.py
   * `build_app`). Anneal needs none of them. */
  devMode?: boolean;
  /** `VLLM_ALLOW_RUNTIME_LORA_UPDATING` (default on): registers /v1/load_lora_adapter and
   * /v1/unload_lora_adapter (vllm/entrypoints/serve/lora/api_router.py), with no check of
   * `--enable-lora`. */
  runtimeLoraUpdating?: boolean;
  /** `--enable-lora` (default on). Without it the routes (when registered) still answer an
   * unload of an unknown name with 404 NotFoundError (checked before the engine), but every
   * load fails in the engine: "LoRA is not enabled." (vllm/v1/worker/lora_model_runner_mixin.py),
   * a 500 on `current`, a 400 on `v0.11`. */
  enableLora?: boolean;
  /** Adapter paths that do not exist on this host: loading one is vLLM's 404 "No adapter
   * found" (paths that exist on this machine are checked for real). */
  missingPaths?: readonly string[];
  /** Read adapter directories that exist on this machine like vLLM does (default true); off
   * for tests whose trainer writes something other than PEFT adapters. */
  checkAdapterFiles?: boolean;
  /** `max_model_len` reported by GET /v1/models; false = an older server without the field. */
  reportMaxModelLen?: boolean;
  /** `--logprobs-mode` (vLLM's default raw_logprobs): how the top alternatives of the first
   * position are reported when a request asks for them (`logprobs` > 0), over a 50-token view of
   * the fake's logits (testing/fake-logprobs-server.ts). */
  logprobsMode?: LogprobsMode;
  /** Generation throughput of this replica in tokens/s over all its requests (benchmarks): a
   * completion is answered once its generated tokens (all `n` choices) would be done at this
   * rate, after the tokens of the completions before it. Default: instant. */
  tokensPerSecond?: number;
  /** Decode speed of one sequence in tokens/s under continuous batching (benchmarks; replaces
   * `tokensPerSecond`): every running sequence gains a token per scheduler step and a new
   * request joins the running batch at the next step (vllm/v1/core/sched/scheduler.py@00024d31
   * `Scheduler`: up to `max_num_seqs` requests in `running`, not modelled here), so a completion
   * takes one step plus its longest choice, whatever else runs, and concurrent completions
   * overlap instead of queueing. */
  decodeTokensPerSecond?: number;
  /** Or: continuous batching whose step time grows with the batch (batch-decode.ts; benchmarks;
   * replaces both rates above). */
  batching?: BatchDecodeOptions;
  /** A long generation, scaled: each completion sends nothing, headers included, for this many
   * ms before its reply (vLLM's non-streaming `/v1/completions` answers only once generation
   * has ended, vllm/entrypoints/openai/serving_completion.py). */
  holdHeadersMs?: number;
  /** `--max-loras`: distinct adapters per batch, and with `maxCpuLoras` the engine's LRU cache
   * (lora-cache.ts). Unset: no cache modelled, every loaded adapter stays resident. */
  maxLoras?: number;
  /** `--max-cpu-loras` (vLLM's default: `maxLoras`). */
  maxCpuLoras?: number;
  /** ms a read of an adapter from disk takes (a load, and a re-read after the CPU LRU evicted
   * it; lora-cache.ts). Default: instant. */
  adapterReadMs?: number;
  /** A faulty server (vLLM#47724: a request served with another tenant's adapter): given the
   * adapter a completion names and the names loaded, the adapter that serves it instead, or
   * undefined to serve it right. The reply names the adapter that served it, as vLLM's reply
   * does (`model_name(lora_request)`, vllm/entrypoints/openai/serving_completion.py@00463e62). */
  crossServe?: (requested: string, loaded: readonly string[]) => string | undefined;
  /** `--max-num-seqs`: sequences running at once, the rest wait in the order of
   * `schedulingPolicy` (sched-queue.ts). Unset: every request runs at once. */
  maxNumSeqs?: number;
  /** `--scheduling-policy` (vLLM's default fcfs); `priority` orders the waiting requests by the
   * request's `priority`, then arrival (sched-queue.ts). */
  schedulingPolicy?: SchedulingPolicy;
}

export class FakeVllmServer {
  readonly requests: RecordedRequest[] = [];
  /** One-off replies per path, consumed in order before normal handling. */
  readonly script = new Map<string, ScriptedReply[]>();
  /** Names and the engine's LoRA cache (lora-routes.ts). */
  readonly lora: FakeLoraState;
  /** Names listed by GET /v1/models: name -> path. */
  readonly adapters: Map<string, string>;
  /** Adapter name -> every path loaded under it, in order (unloads do not clear it). */
  readonly loadHistory: Map<string, string[]>;
  /** Loads of a name already loaded before with another path (see the file comment). */
  readonly staleCacheLoads: Array<{ name: string; cachedPath: string; path: string }>;
  /** Per adapter path read from disk: the modules its tensors adapt, as the loader saw them. */
  readonly adapterTensorModules: Map<string, string[]>;
  healthStatus = 200;
  /** Requests currently held open by a `hang` script entry. */
  hanging = 0;
  private server: Server;
  private port = 0;
  /** `model` of every completion request answered, in order (the adapter each one used). */
  readonly completedModels: string[] = [];
  /** Every completion answered: the model it named and the model (adapter) that served it. */
  readonly served: Array<{
    requested: string;
    servedBy: string;
    /** Tokens generated (all choices), performance.now() when answered, and when the request
     * arrived (before the waiting queue of `maxNumSeqs`). */
    tokens: number;
    atMs: number;
    arrivedMs: number;
  }> = [];
  /** The engine's batch (`batching`). */
  readonly batch: ContinuousBatch | undefined;
  private held: Promise<void> | undefined;
  private releaseHeld: (() => void) | undefined;
  readonly options: Required<
    Omit<
      FakeVllmOptions,
      | 'apiKey'
      | 'stopAfter'
      | 'version'
      | 'tokensPerSecond'
      | 'decodeTokensPerSecond'
      | 'holdHeadersMs'
      | 'maxLoras'
      | 'maxCpuLoras'
      | 'adapterReadMs'
      | 'batching'
      | 'crossServe'
      | 'maxNumSeqs'
      | 'sampleFrom'
    >
  > &
    Pick<
      FakeVllmOptions,
      | 'apiKey'
      | 'stopAfter'
      | 'tokensPerSecond'
      | 'decodeTokensPerSecond'
      | 'holdHeadersMs'
      | 'maxLoras'
      | 'maxCpuLoras'
      | 'adapterReadMs'
      | 'batching'
      | 'crossServe'
      | 'maxNumSeqs'
      | 'sampleFrom'
    > & {
      version: string | null;
    };
  /** performance.now() at which this replica finishes the tokens it has been given. */
  private busyUntil = 0;
  /** The waiting queue and `--max-num-seqs` (sched-queue.ts), when `maxNumSeqs` is set. */
  readonly scheduler: FakeScheduler | undefined;

  private constructor(options: FakeVllmOptions) {
    const generation = options.generation ?? 'current';
    this.options = {
      shape: 'new',
      generation,
      version: generation === 'current' ? '0.20.1' : '0.11.2',
      maxLoraRank: 16,
      servedModel: 'base-model',
      maxModelLen: 4096,
      vocabSize: 32_000,
      devMode: false,
      runtimeLoraUpdating: true,
      enableLora: true,
      missingPaths: [],
      checkAdapterFiles: true,
      logprobsMode: 'raw_logprobs',
      reportMaxModelLen: true,
      schedulingPolicy: 'fcfs',
      ...options,
    };
    this.scheduler =
      options.maxNumSeqs === undefined
        ? undefined
        : new FakeScheduler(options.maxNumSeqs, this.options.schedulingPolicy);
    this.batch = options.batching && new ContinuousBatch(options.batching);
    this.lora = new FakeLoraState(this.options, (ms) => this.batch?.stall(ms));
    this.adapters = this.lora.adapters;
    this.loadHistory = this.lora.loadHistory;
    this.staleCacheLoads = this.lora.staleCacheLoads;
    this.adapterTensorModules = this.lora.adapterTensorModules;
    this.server = this.createHttpServer();
  }

  static async start(options: FakeVllmOptions = {}): Promise<FakeVllmServer> {
    const fake = new FakeVllmServer(options);
    await fake.listen(0);
    return fake;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Completions wait (after validation) until `release()`: requests in flight on demand. */
  holdCompletions(): { release(): void; waiting(): number } {
    let waiting = 0;
    this.held = new Promise((resolve) => {
      this.releaseHeld = resolve;
    });
    const gate = this.held;
    this.waitingOn = (delta) => (waiting += delta);
    return {
      release: () => {
        if (this.held === gate) {
          this.releaseHeld?.();
          this.held = undefined;
        }
      },
      waiting: () => waiting,
    };
  }

  private waitingOn: (delta: number) => void = () => undefined;

  enqueue(path: string, ...replies: ScriptedReply[]): void {
    this.script.set(path, [...(this.script.get(path) ?? []), ...replies]);
  }

  requestsTo(path: string): RecordedRequest[] {
    return this.requests.filter((r) => r.path === path);
  }

  /** Stop listening (clients get ECONNREFUSED); `restart` listens on the same port again. */
  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  async restart(): Promise<void> {
    this.server = this.createHttpServer();
    await this.listen(this.port);
  }

  async close(): Promise<void> {
    if (this.server.listening) await this.stop();
  }

  private async listen(port: number): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(port, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  private createHttpServer(): Server {
    return createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => this.handle(req, res, Buffer.concat(chunks).toString('utf8')));
    });
  }

  private handle(req: IncomingMessage, res: ServerResponse, raw: string): void {
    const path = (req.url ?? '/').split('?')[0] as string;
    let body: unknown;
    try {
      body = raw.length > 0 ? JSON.parse(raw) : undefined;
    } catch {
      body = raw;
    }
    const record: RecordedRequest = {
      method: req.method ?? 'GET',
      path,
      body,
      headers: req.headers,
    };
    this.requests.push(record);
    res.on('finish', () => (record.status = res.statusCode));
    const scripted = this.script.get(path)?.shift();
    if (scripted?.kind === 'drop') return void req.socket.destroy();
    if (scripted?.kind === 'hang') {
      this.hanging += 1;
      res.on('close', () => (this.hanging -= 1));
      return;
    }
    if (scripted) {
      const reply =
        typeof scripted.body === 'function'
          ? (scripted.body as (request: unknown) => unknown)(body)
          : scripted.body;
      return send(res, scripted.status, reply);
    }
    this.route(req, res, path, body);
  }

  private route(req: IncomingMessage, res: ServerResponse, path: string, body: unknown): void {
    const { apiKey } = this.options;
    if (path === '/health') return send(res, this.healthStatus, undefined);
    if (path === '/version' && req.method === 'GET' && this.options.version !== null) {
      return send(res, 200, { version: this.options.version });
    }
    if (this.options.devMode && DEV_ROUTES.has(path)) {
      return path === '/is_sleeping' ? send(res, 200, { is_sleeping: false }) : send(res, 200, {});
    }
    if (path.startsWith('/v1/') && apiKey && req.headers.authorization !== `Bearer ${apiKey}`) {
      return send(res, 401, { error: 'Unauthorized' });
    }
    const failed = (error: unknown) =>
      send(res, 500, errorBody(this.options.shape, 500, 'InternalServerError', String(error)));
    if (path === '/v1/completions') return void this.completions(res, body).catch(failed);
    if (path === '/v1/load_lora_adapter' && this.options.runtimeLoraUpdating)
      return void this.lora.load(body).then((reply) => answer(res, reply), failed);
    if (path === '/v1/unload_lora_adapter' && this.options.runtimeLoraUpdating)
      return answer(res, this.lora.unload(body));
    if (path === '/metrics' && req.method === 'GET') return this.metrics(res);
    if (path === '/v1/models' && req.method === 'GET') return this.models(res);
    if (path === '/tokenize') {
      const prompt = (body as { prompt: string }).prompt;
      const tokens = [...Buffer.from(prompt, 'utf8')];
      const max = this.options.maxModelLen;
      return send(res, 200, { count: tokens.length, max_model_len: max, tokens, token_strs: null });
    }
    if (path === '/detokenize') {
      const tokens = (body as { tokens: number[] }).tokens;
      return send(res, 200, { prompt: Buffer.from(tokens).toString('utf8') });
    }
    send(res, 404, { detail: 'Not Found' }); // FastAPI's reply for unregistered routes
  }

  private async completions(res: ServerResponse, body: unknown): Promise<void> {
    const { shape, servedModel, maxModelLen, generation } = this.options;
    const invalid = validateCompletion(body);
    if (invalid) return send(res, 400, errorBody(shape, 400, 'BadRequestError', invalid));
    const request = body as Record<string, unknown> & { prompt: number[]; model: string };
    if (request.model !== servedModel && !this.adapters.has(request.model)) {
      const message = `The model \`${request.model}\` does not exist.`;
      return send(res, 404, errorBody(shape, 404, 'NotFoundError', message));
    }
    const maxTokens = (request['max_tokens'] as number | undefined) ?? 16; // vLLM's default
    if (request.prompt.length + maxTokens > maxModelLen) {
      const message = contextOverflowMessage(
        maxModelLen,
        request.prompt.length,
        maxTokens,
        generation,
      );
      return send(res, 400, errorBody(shape, 400, 'BadRequestError', message));
    }
    const n = (request['n'] as number | undefined) ?? 1;
    const seed = (request['seed'] as number | undefined) ?? 0;
    const stopIds = (request['stop_token_ids'] as number[] | undefined) ?? [];
    const choices = Array.from({ length: n }, (_, k) =>
      this.generate(request.prompt, maxTokens, seed + k, stopIds),
    );
    const servedBy =
      request.model === servedModel
        ? servedModel
        : (this.options.crossServe?.(request.model, [...this.adapters.keys()]) ?? request.model);
    const arrivedMs = performance.now();
    const seats = await this.scheduler?.admit(n, Number(request['priority'] ?? 0));
    const slot = servedBy === servedModel ? () => undefined : await this.lora.run(servedBy);
    if (typeof slot !== 'function') {
      seats?.();
      return send(res, 500, errorBody(shape, 500, 'InternalServerError', slot.failure));
    }
    try {
      await this.generating(choices);
    } finally {
      slot();
      seats?.();
    }
    const tokensAsIds = request['return_tokens_as_token_ids'] === true;
    if (request.model !== servedModel && !this.adapters.has(request.model)) {
      // Unloaded while the request was held: vLLM would have failed it mid-generation.
      const message = `The model \`${request.model}\` was unloaded during the request.`;
      return send(res, 500, errorBody(shape, 500, 'InternalServerError', message));
    }
    this.completedModels.push(request.model);
    const tokens = choices.reduce((sum, choice) => sum + choice.tokens.length, 0);
    const atMs = performance.now();
    this.served.push({ requested: request.model, servedBy, tokens, atMs, arrivedMs });
    // No `logprobs` in the request: none in the reply (vLLM writes `"logprobs": null`).
    const logprobs = request['logprobs'] !== undefined && request['logprobs'] !== null;
    const alternatives = Number(request['logprobs'] ?? 0);
    if (!(alternatives > 0 && tokensAsIds)) {
      // No alternatives to report: the reply written directly (same bytes, a fraction of the
      // cost of building and serialising its per-token objects).
      const json = completionResponseJson(shape, servedBy, request.prompt, choices, {
        tokensAsIds,
        logprobs,
      });
      sendBody(res, 200, 'application/json', json);
      return;
    }
    const reply = completionResponse(shape, servedBy, request.prompt, choices, {
      tokensAsIds,
    });
    // vllm/v1/sample/sampler.py: the reported values follow --logprobs-mode.
    const first = firstPositionTop(
      this.options.logprobsMode,
      request.prompt,
      {
        temperature: Number(request['temperature'] ?? 1),
        topK: Number(request['top_k'] ?? -1),
      },
      alternatives,
      50,
    );
    for (const choice of reply.choices) {
      if (choice.logprobs?.top_logprobs) choice.logprobs.top_logprobs[0] = first.top;
    }
    send(res, 200, reply);
  }

  /** Waits out the generation (throughput, held headers, a test's hold). */
  private async generating(choices: FixtureChoice[]): Promise<void> {
    const generated = choices.reduce((sum, choice) => sum + choice.tokens.length, 0);
    const longest = choices.reduce((most, choice) => Math.max(most, choice.tokens.length), 0);
    const decode = this.options.decodeTokensPerSecond;
    if (this.batch) await this.batch.decode(choices.map((choice) => choice.tokens.length));
    const generating =
      (this.batch
        ? 0
        : decode === undefined
          ? this.generationMs(generated)
          : ((1 + longest) / decode) * 1000) + (this.options.holdHeadersMs ?? 0);
    if (generating > 0) await new Promise((resolve) => setTimeout(resolve, generating));
    if (this.held) {
      this.waitingOn(1);
      await this.held;
      this.waitingOn(-1);
    }
  }

  /** How long `tokens` more take at `tokensPerSecond`, queued behind earlier completions. */
  private generationMs(tokens: number): number {
    const rate = this.options.tokensPerSecond;
    if (rate === undefined) return 0;
    const now = performance.now();
    this.busyUntil = Math.max(now, this.busyUntil) + (tokens / rate) * 1000;
    return this.busyUntil - now;
  }

  /** Deterministic "sampling": sample k of a request uses seed + k (vLLM semantics). */
  private generate(
    prompt: number[],
    maxTokens: number,
    seed: number,
    stopIds: number[],
  ): FixtureChoice {
    const { vocabSize, stopAfter } = this.options;
    const promptSum = prompt.reduce((a, b) => a + b, 0);
    const stopAt =
      stopAfter !== undefined && stopIds.length > 0 && stopAfter < maxTokens ? stopAfter : -1;
    const length = stopAt >= 0 ? stopAt + 1 : maxTokens;
    const from = this.options.sampleFrom;
    const start = promptSum + 31 * seed;
    // sampleFrom: windows SAMPLE_STRIDE tokens apart a seed, so a prompt's samples differ as a
    // model's do (not the same text shifted, which the ledger's gzip would find)
    const fromStart = promptSum + SAMPLE_STRIDE * seed;
    const tokens = Array.from({ length }, (_, i) =>
      i === stopAt
        ? (stopIds[0] as number)
        : from === undefined || from.length === 0
          ? (start + 7 * i) % vocabSize
          : (from[(fromStart + i) % from.length] as number),
    );
    const logprobs = tokens.map(fakeLogprob);
    return stopAt >= 0
      ? { tokens, logprobs, finishReason: 'stop', stopReason: stopIds[0] as number }
      : { tokens, logprobs, finishReason: 'length' };
  }

  /** GET /metrics: `vllm:lora_requests_info` (a gauge whose value is the time; labels
   * `max_lora`, `running_lora_adapters`, `waiting_lora_adapters`) when LoRA is on. */
  private metrics(res: ServerResponse): void {
    const { maxLoras, enableLora } = this.options;
    const lines = [
      '# HELP vllm:num_requests_running Number of requests in model execution batches.',
    ];
    lines.push('# TYPE vllm:num_requests_running gauge', 'vllm:num_requests_running 0.0');
    if (enableLora && maxLoras !== undefined) {
      lines.push(
        '# HELP vllm:lora_requests_info Running stats on lora requests.',
        '# TYPE vllm:lora_requests_info gauge',
        `vllm:lora_requests_info{max_lora="${maxLoras}",running_lora_adapters="",` +
          `waiting_lora_adapters=""} ${(Date.now() / 1000).toFixed(3)}`,
      );
    }
    res
      .writeHead(200, { 'content-type': 'text/plain; version=0.0.4' })
      .end(lines.join('\n') + '\n');
  }

  /** GET /v1/models: the base model (with `max_model_len`) and each loaded adapter. */
  private models(res: ServerResponse): void {
    const { servedModel, maxModelLen, reportMaxModelLen } = this.options;
    const card = (id: string, root: string, parent: string | null) => ({
      id,
      object: 'model',
      created: 1_760_000_000,
      owned_by: 'vllm',
      root,
      parent,
      ...(reportMaxModelLen ? { max_model_len: maxModelLen } : {}),
      permission: [],
    });
    const data = [
      card(servedModel, servedModel, null),
      ...[...this.adapters].map(([name, path]) => card(name, path, servedModel)),
    ];
    send(res, 200, { object: 'list', data });
  }
}

/** Registered only under VLLM_SERVER_DEV_MODE. */
const DEV_ROUTES = new Set([
  '/reset_prefix_cache',
  '/collective_rpc',
  '/sleep',
  '/wake_up',
  '/is_sleeping',
]);

function send(res: ServerResponse, status: number, body: unknown): void {
  if (body === undefined) {
    res.writeHead(status).end();
    return;
  }
  sendBody(res, status, 'application/json', JSON.stringify(body));
}

function answer(res: ServerResponse, reply: LoraReply): void {
  if (reply.text !== undefined) return sendText(res, reply.status, reply.text);
  send(res, reply.status, reply.json);
}

function sendText(res: ServerResponse, status: number, text: string): void {
  sendBody(res, status, 'text/plain', text);
}

/** A whole body with its `content-length`, as vLLM's server sends every non-streaming reply:
 * Starlette's `Response.init_headers` sets it from the rendered body
 * (starlette/responses.py@1f6b2305). Node would send it chunked otherwise. */
function sendBody(res: ServerResponse, status: number, contentType: string, text: string): void {
  res
    .writeHead(status, {
      'content-type': contentType,
      'content-length': String(Buffer.byteLength(text)),
    })
    .end(text);
}
