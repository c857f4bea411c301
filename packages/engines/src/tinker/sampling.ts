/**
 * Hosted sampling as an InferenceEngine (docs/engines.md "Hosted Tinker"): the Tinker service
 * (or SkyRL's Tinker server) samples the trainer's own exports, so weights never leave it.
 *
 *   loadWeights({name, path})  -> create_sampling_session {session_id, sampling_session_seq_id,
 *                                 model_path: path} (path from save_weights_for_sampler)
 *   sample(request)            -> asample {sampling_session_id, seq_id, num_samples, prompt,
 *                                 sampling_params} -> future -> {sequences: [{tokens, logprobs,
 *                                 stop_reason}]}: the sampling logprobs come with the tokens.
 *
 * Follows the tinker SDK (lib/public_interfaces/sampling_client.py, internal_client_holder.py):
 * seq_ids count the requests of one sampling session; a 429 on asample is backpressure (back off
 * and resend); the result is polled like any future (futures.ts). A request with a seed is sent
 * as one request per sample with seed + k, so sample k is reproducible alone (the contract of
 * SampleRequest.seed); without a seed, one request carries `num_samples: n`.
 */
import { ENGINE_ERROR_CODES, EngineError } from '../http/errors.ts';
import { isObject } from '../http/request.ts';
import { backoffDelay, isRetryableEngineError } from '../http/retry.ts';
import type {
  FinishReason,
  InferenceEngine,
  ScoredSequence,
  SampleRequest,
  SamplerWeights,
} from '../types.ts';
import { resolveTinkerConnection } from './config.ts';
import type { ResolvedTinkerConnection, TinkerConnectionConfig } from './config.ts';
import { operationDeadline, resultOf } from './futures.ts';
import { TinkerSession } from './session.ts';
import type { TinkerDeps } from './session.ts';
import type { TinkerTransport } from './transport.ts';
import { TINKER_ROUTES } from './wire.ts';
import type * as Wire from './wire.ts';

export interface TinkerSamplerConfig extends TinkerConnectionConfig {
  /** Base model sampled when a request names no weights (`SampleRequest.model` unset). */
  baseModel?: string;
}

interface SamplingSession {
  id: string;
  nextSeqId: number;
}

export class TinkerSamplingEngine implements InferenceEngine {
  /** Serving name -> its sampling session. */
  private readonly served = new Map<string, Promise<SamplingSession>>();
  private base: Promise<SamplingSession> | undefined;
  private nextSamplingSessionSeqId = 0;
  private readonly transport: TinkerTransport;

  private constructor(
    readonly config: ResolvedTinkerConnection & { baseModel: string | undefined },
    private readonly session: TinkerSession,
  ) {
    this.transport = session.transport;
  }

  static async connect(
    config: TinkerSamplerConfig,
    deps: TinkerDeps = {},
  ): Promise<TinkerSamplingEngine> {
    const resolved = { ...resolveTinkerConnection(config), baseModel: config.baseModel };
    return new TinkerSamplingEngine(resolved, await TinkerSession.open(resolved, deps));
  }

  get sessionId(): string {
    return this.session.id;
  }

  /** Serves `weights.path` (a `tinker://` sampler path) under `weights.name`. */
  async loadWeights(weights: SamplerWeights): Promise<void> {
    this.assertOpen();
    if (!weights.path.startsWith('tinker://')) {
      throw new RangeError(
        `inference endpoint '${this.config.name}': hosted sampling serves tinker:// sampler ` +
          `paths from save_weights_for_sampler, got ${JSON.stringify(weights.path)}`,
      );
    }
    const created = this.createSamplingSession({ model_path: weights.path });
    created.catch(() => undefined); // reported to whoever awaits it
    this.served.set(weights.name, created);
    try {
      await created;
    } catch (error) {
      if (this.served.get(weights.name) === created) this.served.delete(weights.name);
      throw error;
    }
  }

  /** Stops serving `name` here (the service keeps the checkpoint; see deleteSamplerWeights). */
  async releaseWeights(name: string): Promise<void> {
    this.served.delete(name);
  }

  async sample(request: SampleRequest, signal?: AbortSignal): Promise<ScoredSequence[]> {
    this.assertOpen();
    checkRequest(request);
    const session = await this.sessionFor(request.model);
    const params: Wire.SamplingParams = {
      max_tokens: request.maxTokens,
      temperature: request.temperature,
      top_p: request.topP,
      ...(request.stopTokenIds && request.stopTokenIds.length > 0
        ? { stop: [...request.stopTokenIds] }
        : {}),
    };
    const prompt: Wire.ModelInput = {
      chunks: [{ type: 'encoded_text', tokens: [...request.prompt] }],
    };
    if (request.seed === undefined) {
      return this.sampleOnce(session, prompt, request.n, params, signal);
    }
    const seed = request.seed;
    const parts = await Promise.all(
      Array.from({ length: request.n }, (_, k) =>
        this.sampleOnce(session, prompt, 1, { ...params, seed: seed + k }, signal),
      ),
    );
    return parts.flat();
  }

  async close(): Promise<void> {
    this.session.close();
    this.served.clear();
  }

  private async sampleOnce(
    session: SamplingSession,
    prompt: Wire.ModelInput,
    n: number,
    params: Wire.SamplingParams,
    signal: AbortSignal | undefined,
  ): Promise<ScoredSequence[]> {
    const deadline = operationDeadline(this.transport);
    const seqId = session.nextSeqId++;
    const body: Wire.AsampleRequest = {
      sampling_session_id: session.id,
      seq_id: seqId,
      num_samples: n,
      prompt,
      sampling_params: params,
      prompt_logprobs: false,
      topk_prompt_logprobs: 0,
    };
    const reply = await this.postUntil(TINKER_ROUTES.asample, body, deadline, signal);
    const label = `asample (sampling session ${session.id}, seq_id ${seqId})`;
    const result = await resultOf(this.transport, reply, label, deadline);
    return readSequences(result, n, (detail) =>
      this.malformed(`${label}: ${detail}: ${JSON.stringify(result)?.slice(0, 200)}`),
    );
  }

  /** asample: 429 (backpressure), 5xx and connection loss are resent with backoff until the
   * operation's deadline — the SDK resends on 429 for as long as it takes. */
  private async postUntil(
    route: string,
    body: unknown,
    deadline: number,
    signal: AbortSignal | undefined,
  ): Promise<unknown> {
    const { timers, config } = this.transport;
    for (let retry = 0; ; retry += 1) {
      try {
        const options = { attempts: 1, ...(signal && { signal }) };
        return (await this.transport.post(route, body, options)).json;
      } catch (error) {
        const remaining = deadline - timers.now();
        if (!isRetryableEngineError(error) || remaining <= 0) throw error;
        const delayMs = Math.min(backoffDelay(config.retry, retry, this.transport.rng), remaining);
        this.transport.emit({
          type: 'request:retry',
          endpoint: config.name,
          route,
          attempt: retry + 1,
          delayMs,
          error: (error as Error).message,
        });
        await timers.sleep(delayMs, signal);
      }
    }
  }

  private sessionFor(model: string | undefined): Promise<SamplingSession> {
    if (model !== undefined) {
      const served = this.served.get(model);
      if (!served) {
        const known = [...this.served.keys()].join(', ') || 'none';
        throw new EngineError(
          ENGINE_ERROR_CODES.response,
          this.transport.context(TINKER_ROUTES.asample),
          `no weights are served under '${model}' (loaded: ${known}); call loadWeights first`,
        );
      }
      return served;
    }
    if (this.config.baseModel === undefined) {
      throw new RangeError(
        `inference endpoint '${this.config.name}': a request without model samples the base ` +
          'model, and this endpoint has no baseModel configured',
      );
    }
    if (!this.base) {
      const created = this.createSamplingSession({ base_model: this.config.baseModel });
      created.catch(() => {
        if (this.base === created) this.base = undefined; // a failed create is retried next time
      });
      this.base = created;
    }
    return this.base;
  }

  private async createSamplingSession(
    source: { model_path: string } | { base_model: string },
  ): Promise<SamplingSession> {
    const body: Wire.CreateSamplingSessionRequest = {
      session_id: this.session.id,
      sampling_session_seq_id: this.nextSamplingSessionSeqId++,
      ...source,
    };
    const reply = await this.transport.post(TINKER_ROUTES.createSamplingSession, body);
    const created = reply.json;
    if (!isObject(created) || typeof created['sampling_session_id'] !== 'string') {
      throw this.malformed(
        `create_sampling_session reply has no sampling_session_id: ${reply.text.slice(0, 200)}`,
      );
    }
    return { id: created['sampling_session_id'], nextSeqId: 0 };
  }

  private malformed(detail: string): EngineError {
    return new EngineError(
      ENGINE_ERROR_CODES.response,
      this.transport.context(TINKER_ROUTES.asample),
      detail,
    );
  }

  private assertOpen(): void {
    if (this.session.closed) {
      throw new Error(`inference endpoint '${this.config.name}' is closed`);
    }
  }
}

function checkRequest(request: SampleRequest): void {
  const positiveInt = (field: string, value: number) => {
    if (!Number.isInteger(value) || value < 1) {
      throw new RangeError(`sample: ${field} must be an integer >= 1, got ${value}`);
    }
  };
  positiveInt('n', request.n);
  positiveInt('maxTokens', request.maxTokens);
  if (request.prompt.length === 0) throw new RangeError('sample: prompt is empty');
  if (!(request.temperature >= 0)) {
    throw new RangeError(`sample: temperature must be >= 0, got ${request.temperature}`);
  }
  if (!(request.topP > 0 && request.topP <= 1)) {
    throw new RangeError(`sample: topP must be in (0, 1], got ${request.topP}`);
  }
}

const FINISH: Readonly<Record<string, FinishReason>> = { stop: 'stop', length: 'length' };

/** `{sequences: [{tokens, logprobs, stop_reason}]}` -> ScoredSequence[]; the sampling
 * logprobs are required (GRPO's importance ratio is built on them). */
function readSequences(
  result: unknown,
  expected: number,
  fail: (detail: string) => EngineError,
): ScoredSequence[] {
  const sequences = isObject(result) ? result['sequences'] : undefined;
  if (!Array.isArray(sequences)) throw fail('result has no sequences');
  if (sequences.length !== expected) {
    throw fail(`${sequences.length} sequences for num_samples ${expected}`);
  }
  return sequences.map((raw: unknown, i) => {
    const seq = isObject(raw) ? raw : {};
    const tokens = seq['tokens'];
    const logprobs = seq['logprobs'];
    if (!Array.isArray(tokens) || !tokens.every((t) => Number.isInteger(t))) {
      throw fail(`sequences[${i}].tokens is not a list of token ids`);
    }
    if (
      !Array.isArray(logprobs) ||
      logprobs.length !== tokens.length ||
      !logprobs.every((l) => typeof l === 'number')
    ) {
      throw fail(`sequences[${i}].logprobs must hold one logprob per token`);
    }
    const finishReason = FINISH[String(seq['stop_reason'])];
    if (!finishReason) throw fail(`sequences[${i}].stop_reason is not 'stop' or 'length'`);
    return { tokens: tokens as number[], logprobs: logprobs as number[], finishReason };
  });
}
