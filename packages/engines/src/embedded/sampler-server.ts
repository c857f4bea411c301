// The embedded sampler served over the part of vLLM's OpenAI-compatible API that Anneal's vLLM
// client uses (../vllm: client.ts, adapter-calls.ts, weight-sync.ts, probe.ts), so several worker
// processes share one embedded sampler as they would share a vLLM deployment (docs/engines.md
// "Embedded sampler server"). "Adapters" are the embedded trainer's sampler exports (ONNX weight
// sets): `/v1/load_lora_adapter` with `lora_path` = an export directory loads it under
// `lora_name`; at most `maxLoras` sets are resident (weight-sets.ts), reported as vLLM reports
// `--max-loras` (`vllm:lora_requests_info`'s `max_lora` label, vllm/v1/metrics/loggers.py).
// Answers follow vLLM as the fake in packages/engines/test/vllm cites it: a second load of a name
// is a 400 "has already been loaded." and a missing export a 404 "No adapter found"
// (vllm/entrypoints/openai/serving_models.py@075e9ba8, the v0.11 line: no `load_inplace`); an
// unload of an unknown name a 404 NotFoundError; a completion naming no served model a 404 "The
// model `x` does not exist."; each completion's `model` is the weight set that served it
// (`model_name(lora_request)`, vllm/entrypoints/openai/serving_completion.py@00463e62); routes it
// does not have answer FastAPI's 404 `{"detail":"Not Found"}`. Sampling runs in the engine's
// worker threads (onnx-sampler.ts): this event loop only parses and routes.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ScoredSequence } from '../types.ts';
import { EmbeddedInferenceEngine } from './onnx-sampler.ts';
import type { EmbeddedInferenceOptions } from './onnx-sampler.ts';
import { DEFAULT_MODEL_CONFIG } from './params.ts';
import {
  type ParsedCompletion,
  VllmHttpError,
  badRequest,
  completionReply,
  contextOverflow,
  parseCompletionRequest,
} from './sampler-wire.ts';
import { HttpError, readJson } from './server-futures.ts';
import { WeightSetError, WeightSets } from './weight-sets.ts';

export interface SamplerServerOptions {
  /** `--served-model-name`: the base model's id in /v1/models and completions. */
  servedModel: string;
  /** `--max-loras`: weight sets resident at once (and the `max_lora` /metrics reports). */
  maxLoras: number;
  /** The base model's export directory; without it a completion naming the base is a 404. */
  baseExport?: string;
  /** `max_model_len` (default: the embedded model's block size, 256). */
  maxModelLen?: number;
  /** `--api-key`: `Authorization: Bearer <key>` on /v1/* routes. */
  apiKey?: string;
  /** Worker threads and ONNX settings of the sampler (onnx-sampler.ts). */
  engine?: Pick<EmbeddedInferenceOptions, 'threads' | 'intraOpNumThreads' | 'eosTokenId'>;
  /** Largest request body (default 16 MiB). */
  maxBodyBytes?: number;
}

/** What this server is, in /version and the `owned_by` of its model cards (vLLM: `vllm`), so a
 * capability probe tells it from a vLLM server. */
export const EMBEDDED_SAMPLER_OWNER = 'anneal-embedded';

/** One completion answered: the name asked for, the weight set that served it and its export. */
export interface ServedCompletion {
  requested: string;
  served: string;
  path: string;
  count: number;
}

export class EmbeddedSamplerServer {
  private readonly server: Server;
  private readonly engine: EmbeddedInferenceEngine;
  private readonly sets: WeightSets;
  private readonly served = new Map<string, ServedCompletion>();
  private readonly maxModelLen: number;
  private running = 0;
  /** Sequences (`n` a request) of completions received and not yet answered, and the most ever:
   * what a client-side limit on the endpoint's in-flight sequences (the fair share) bounds. */
  private sequences = 0;
  private peakSequences = 0;
  private baseLoaded: Promise<void> | undefined;

  constructor(private readonly options: SamplerServerOptions) {
    if (!options.servedModel) throw new TypeError('servedModel is required');
    this.maxModelLen = options.maxModelLen ?? DEFAULT_MODEL_CONFIG.blockSize;
    // The base (when given) and the resident sets; weight-sets.ts evicts before the engine would.
    this.engine = new EmbeddedInferenceEngine({
      ...options.engine,
      maxLoadedWeights: options.maxLoras + 1,
    });
    this.sets = new WeightSets(this.engine, options.maxLoras);
    this.server = createServer((req, res) => void this.handle(req, res));
  }

  /** Loads the base export (when given) and listens; returns `http://host:port`. */
  async listen(port = 0, host = '127.0.0.1'): Promise<string> {
    if (this.options.baseExport !== undefined) {
      this.baseLoaded = this.engine.loadWeights({
        name: this.options.servedModel,
        path: this.options.baseExport,
      });
      await this.baseLoaded;
    }
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        const { port: bound } = this.server.address() as AddressInfo;
        resolve(`http://${host}:${bound}`);
      });
    });
  }

  /** Every (requested, served) pair answered, with its count (GET /anneal/served). */
  servedCompletions(): ServedCompletion[] {
    return [...this.served.values()];
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    await this.engine.close();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const route = new URL(req.url ?? '/', 'http://localhost').pathname;
    const get = req.method === 'GET';
    try {
      if (route === '/health' && get) return void res.writeHead(200).end();
      if (route === '/version' && get) return json(res, 200, { version: EMBEDDED_SAMPLER_OWNER });
      if (route === '/metrics' && get) return this.metrics(res);
      if (route === '/anneal/served' && get) return json(res, 200, this.servedCompletions());
      if (route.startsWith('/v1/') && !this.authorized(req)) {
        return json(res, 401, { error: 'Unauthorized' });
      }
      if (route === '/v1/models' && get) return json(res, 200, this.models());
      if (req.method === 'POST' && POST_ROUTES.has(route)) {
        const body = await readJson(req, this.options.maxBodyBytes ?? 16 * 2 ** 20).catch(
          (error: unknown) => {
            throw error instanceof HttpError ? error : badRequest('request body must be JSON');
          },
        );
        if (route === '/v1/completions') return await this.complete(res, body);
        if (route === '/v1/load_lora_adapter') return await this.load(res, body);
        return await this.unload(res, body);
      }
      json(res, 404, { detail: 'Not Found' }); // FastAPI's reply for unregistered routes
    } catch (error) {
      const failure =
        error instanceof VllmHttpError
          ? error
          : error instanceof HttpError
            ? new VllmHttpError(error.status, 'BadRequestError', error.message) // 413
            : new VllmHttpError(500, 'InternalServerError', String(error));
      if (!res.headersSent) json(res, failure.status, failure.body());
    }
  }

  private authorized(req: IncomingMessage): boolean {
    const key = this.options.apiKey;
    return key === undefined || req.headers.authorization === `Bearer ${key}`;
  }

  private async load(res: ServerResponse, body: unknown): Promise<void> {
    const { lora_name: name, lora_path: path } = (body ?? {}) as Record<string, unknown>;
    if (typeof name !== 'string' || typeof path !== 'string' || !name || !path) {
      throw new VllmHttpError(
        400,
        'InvalidUserInput',
        "Both 'lora_name' and 'lora_path' must be provided.",
      );
    }
    if (name === this.options.servedModel) {
      throw new VllmHttpError(400, 'InvalidUserInput', `'${name}' is the base model's name.`);
    }
    try {
      await this.sets.load(name, path);
    } catch (error) {
      if (!(error instanceof WeightSetError)) throw error;
      if (error.kind === 'missing') {
        throw new VllmHttpError(
          404,
          'NotFoundError',
          `Loading lora ${name} failed: ${error.message}`,
        );
      }
      throw new VllmHttpError(400, 'InvalidUserInput', error.message);
    }
    text(res, 200, `Success: LoRA adapter '${name}' added successfully.`);
  }

  private async unload(res: ServerResponse, body: unknown): Promise<void> {
    const name = (body as Record<string, unknown> | undefined)?.['lora_name'];
    if (typeof name !== 'string' || !(await this.sets.unload(name))) {
      throw new VllmHttpError(
        404,
        'NotFoundError',
        `The lora adapter '${String(name)}' cannot be found.`,
      );
    }
    text(res, 200, `Success: LoRA adapter '${name}' removed successfully.`);
  }

  private async complete(res: ServerResponse, body: unknown): Promise<void> {
    const request = parseCompletionRequest(body);
    const base = request.model === this.options.servedModel;
    if (!base && !this.sets.has(request.model)) {
      throw new VllmHttpError(
        404,
        'NotFoundError',
        `The model \`${request.model}\` does not exist.`,
      );
    }
    if (base && this.baseLoaded === undefined) {
      throw new VllmHttpError(
        404,
        'NotFoundError',
        `The model \`${request.model}\` has no base weights on this server (start it with an ` +
          'export of the base model); sample a loaded adapter instead.',
      );
    }
    if (request.prompt.length + request.maxTokens > this.maxModelLen) {
      throw contextOverflow(this.maxModelLen, request.prompt.length, request.maxTokens);
    }
    this.sequences += request.n;
    this.peakSequences = Math.max(this.peakSequences, this.sequences);
    try {
      await this.sampleAndReply(res, request, base);
    } finally {
      this.sequences -= request.n;
    }
  }

  private async sampleAndReply(
    res: ServerResponse,
    request: ParsedCompletion,
    base: boolean,
  ): Promise<void> {
    // The client gone: the generation is aborted in the worker thread.
    const aborted = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) aborted.abort();
    });
    const release = base
      ? () => undefined
      : await this.sets.acquire(request.model).catch((error: unknown) => {
          // unloaded while this request waited for room
          if (!(error instanceof WeightSetError)) throw error;
          throw new VllmHttpError(404, 'NotFoundError', error.message);
        });
    const path = base
      ? (this.options.baseExport as string)
      : (this.sets.pathOf(request.model) ?? '');
    let sequences: ScoredSequence[];
    this.running += 1;
    try {
      sequences = await this.engine.sample(
        {
          prompt: request.prompt,
          n: request.n,
          maxTokens: request.maxTokens,
          temperature: request.temperature,
          topP: request.topP,
          ...(request.seed !== undefined && { seed: request.seed }),
          stopTokenIds: request.stopTokenIds,
          model: request.model,
        },
        aborted.signal,
      );
    } catch (error) {
      if (aborted.signal.aborted) return;
      // The engine's checks of the request (e.g. a prompt token outside the vocabulary): 400.
      if (error instanceof RangeError) throw badRequest(error.message);
      throw new VllmHttpError(500, 'InternalServerError', (error as Error).message);
    } finally {
      this.running -= 1;
      release();
    }
    const served = request.model; // the set acquired for it, by name
    const key = `${request.model}\n${served}`;
    const record = this.served.get(key) ?? { requested: request.model, served, path, count: 0 };
    record.count += 1;
    this.served.set(key, record);
    json(res, 200, completionReply(request, served, sequences));
  }

  /** GET /v1/models: the base card (with `max_model_len`) and each loaded set as an adapter
   * card whose `root` is its export path and `parent` the base (as vLLM lists LoRA adapters). */
  private models(): unknown {
    const card = (id: string, root: string, parent: string | null) => ({
      id,
      object: 'model',
      created: 1_760_000_000,
      owned_by: EMBEDDED_SAMPLER_OWNER,
      root,
      parent,
      max_model_len: this.maxModelLen,
      permission: [],
    });
    const { servedModel, baseExport } = this.options;
    return {
      object: 'list',
      data: [
        card(servedModel, baseExport ?? servedModel, null),
        ...this.sets.listed().map(([name, path]) => card(name, path, servedModel)),
      ],
    };
  }

  /** GET /metrics: vLLM's `vllm:lora_requests_info` (labels as vllm/v1/metrics/loggers.py writes
   * them: `max_lora`, `running_lora_adapters`, `waiting_lora_adapters`; the value is the time)
   * and `vllm:num_requests_running`, then this server's own weight-set counters. */
  private metrics(res: ServerResponse): void {
    const stats = this.sets.stats();
    const lines = [
      '# HELP vllm:num_requests_running Number of requests in model execution batches.',
      '# TYPE vllm:num_requests_running gauge',
      `vllm:num_requests_running ${this.running}.0`,
      '# HELP vllm:lora_requests_info Running stats on lora requests.',
      '# TYPE vllm:lora_requests_info gauge',
      `vllm:lora_requests_info{max_lora="${stats.maxResident}",running_lora_adapters=` +
        `"${stats.running.join(',')}",waiting_lora_adapters=""} ${(Date.now() / 1000).toFixed(3)}`,
      '# HELP anneal_sampler_weight_sets_listed Weight sets loaded (listed by /v1/models).',
      '# TYPE anneal_sampler_weight_sets_listed gauge',
      `anneal_sampler_weight_sets_listed ${stats.listed}`,
      '# HELP anneal_sampler_weight_sets_resident Weight sets held in ONNX sessions now.',
      '# TYPE anneal_sampler_weight_sets_resident gauge',
      `anneal_sampler_weight_sets_resident ${stats.resident.length}`,
      '# HELP anneal_sampler_weight_sets_resident_peak Most weight sets ever resident at once.',
      '# TYPE anneal_sampler_weight_sets_resident_peak gauge',
      `anneal_sampler_weight_sets_resident_peak ${stats.peakResident}`,
      '# HELP anneal_sampler_sequences_running_peak Most sequences of completions in flight at once.',
      '# TYPE anneal_sampler_sequences_running_peak gauge',
      `anneal_sampler_sequences_running_peak ${this.peakSequences}`,
      '# HELP anneal_sampler_weight_set_reads_total Exports read (loads and re-reads after eviction).',
      '# TYPE anneal_sampler_weight_set_reads_total counter',
      `anneal_sampler_weight_set_reads_total ${stats.reads}`,
      '# HELP anneal_sampler_weight_set_evictions_total Resident sets evicted to make room.',
      '# TYPE anneal_sampler_weight_set_evictions_total counter',
      `anneal_sampler_weight_set_evictions_total ${stats.evictions}`,
    ];
    res
      .writeHead(200, { 'content-type': 'text/plain; version=0.0.4' })
      .end(lines.join('\n') + '\n');
  }
}

const POST_ROUTES = new Set([
  '/v1/completions',
  '/v1/load_lora_adapter',
  '/v1/unload_lora_adapter',
]);

function json(res: ServerResponse, status: number, body: unknown): void {
  text(res, status, JSON.stringify(body), 'application/json');
}

/** With its length, as vLLM sends it (a client reads a body of announced length into one
 * buffer: http/request.ts). */
function text(res: ServerResponse, status: number, body: string, type = 'text/plain'): void {
  res
    .writeHead(status, { 'content-type': type, 'content-length': String(Buffer.byteLength(body)) })
    .end(body);
}
