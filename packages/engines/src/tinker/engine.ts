/**
 * Trainer engine over the Tinker-compatible HTTP API (docs/engines.md): Thinking Machines'
 * hosted Tinker, SkyRL's Tinker server, or Anneal's embedded trainer served over HTTP.
 * Speaks the JSON subset of tinker SDK <= 0.24.1. A session is created on `connect` and kept
 * alive with `session_heartbeat` every `heartbeatIntervalMs` until `close`.
 *
 * Reduction: backends differ (Tinker and SkyRL-FSDP sum token losses, SkyRL-JAX averages per
 * sequence). This client does not rescale; it exposes the declared `capabilities.reduction`
 * so the caller (packages/rl) scales per-token advantages to optimise docs/recipe.md's J exactly.
 */
import { ENGINE_ERROR_CODES, EngineError } from '../http/errors.ts';
import { isObject } from '../http/request.ts';
import type { CreateModelOptions, TrainerCapabilities, TrainerEngine } from '../types.ts';
import { resolveTinkerConfig } from './config.ts';
import type { ResolvedTinkerConfig, TinkerEndpointConfig } from './config.ts';
import { isFutureReply, resultOf } from './futures.ts';
import { TinkerTrainerModel } from './model.ts';
import { TinkerSession } from './session.ts';
import type { TinkerDeps } from './session.ts';
import type { TinkerTransport } from './transport.ts';
import { TINKER_ROUTES } from './wire.ts';
import type * as Wire from './wire.ts';

export type { TinkerDeps } from './session.ts';

export class TinkerTrainerEngine implements TrainerEngine {
  readonly config: ResolvedTinkerConfig;
  private readonly transport: TinkerTransport;
  /** Hosted Tinker requires `model_seq_id`, a per-session counter of create_model calls. */
  private nextModelSeqId = 0;

  private constructor(
    config: ResolvedTinkerConfig,
    private readonly session: TinkerSession,
  ) {
    this.config = config;
    this.transport = session.transport;
  }

  /** Creates a session on the server and starts its heartbeat. */
  static async connect(
    config: TinkerEndpointConfig,
    deps: TinkerDeps = {},
  ): Promise<TinkerTrainerEngine> {
    const resolved = resolveTinkerConfig(config);
    return new TinkerTrainerEngine(resolved, await TinkerSession.open(resolved, deps));
  }

  get sessionId(): string {
    return this.session.id;
  }

  get capabilities(): TrainerCapabilities {
    return this.config.capabilities;
  }

  async createModel(options: CreateModelOptions): Promise<TinkerTrainerModel> {
    this.assertOpen();
    const head = options.head ?? 'lm';
    const caps = this.config.capabilities;
    if (head === 'value' && !caps.losses.includes('bradley_terry')) {
      throw new EngineError(
        ENGINE_ERROR_CODES.unsupported,
        this.transport.context(TINKER_ROUTES.createModel),
        'value-head models (rm runs) need a backend with the bradley_terry loss; this one ' +
          `declares [${caps.losses.join(', ')}] (use the embedded trainer)`,
      );
    }
    if (!Number.isInteger(options.loraRank) || options.loraRank < 1) {
      throw new RangeError(
        `createModel: loraRank must be an integer >= 1, got ${options.loraRank}`,
      );
    }
    const body: Wire.CreateModelRequest = {
      session_id: this.session.id,
      base_model: options.baseModel,
      // Explicit, so hosted Tinker trains what vLLM can serve: its SDK defaults train_unembed
      // to true (types/lora_config.py), and vLLM refuses the `model.unembed_tokens` LoRA.
      lora_config: {
        rank: options.loraRank,
        ...(options.seed === undefined ? {} : { seed: options.seed }),
        train_attn: true,
        train_mlp: true,
        train_unembed: false,
      },
      model_role: 'policy',
      model_seq_id: this.nextModelSeqId++,
      ...(head === 'value' ? { head } : {}),
    };
    const reply = await this.transport.post(TINKER_ROUTES.createModel, body);
    // SkyRL answers with the model (`status: "created"`); hosted Tinker with a future
    // `{request_id, model_id}` whose result is the model.
    const created = isFutureReply(reply.json)
      ? await resultOf(this.transport, reply.json, `create_model (${options.baseModel})`)
      : reply.json;
    if (!isObject(created) || typeof created['model_id'] !== 'string') {
      throw new EngineError(
        ENGINE_ERROR_CODES.response,
        this.transport.context(TINKER_ROUTES.createModel),
        `create_model reply has no model_id: ${reply.text.slice(0, 200)}`,
      );
    }
    return new TinkerTrainerModel(
      created['model_id'],
      this.transport,
      caps,
      1,
      this.config.maxDatumsPerRequest,
    );
  }

  /** Attach to an existing `model_id` (e.g. after a worker restart) without creating one.
   * `firstSeqId` must continue past the seq_ids the server has seen for this model, else
   * reused seq_ids with new payloads are answered 409 (ANNEAL_ERR_TRAINER_SEQ_ID_CONFLICT). */
  attachModel(modelId: string, firstSeqId = 1): TinkerTrainerModel {
    this.assertOpen();
    return new TinkerTrainerModel(
      modelId,
      this.transport,
      this.config.capabilities,
      firstSeqId,
      this.config.maxDatumsPerRequest,
    );
  }

  /** One `session_heartbeat` (also sent every `heartbeatIntervalMs`). Failures are reported
   * as `session:heartbeat_failed` events and rethrown; a 404 means the session is gone. */
  heartbeat(): Promise<void> {
    return this.session.heartbeat();
  }

  /** `GET healthz`. */
  async healthy(): Promise<boolean> {
    try {
      const reply = await this.transport.get(TINKER_ROUTES.healthz);
      return isObject(reply.json) && reply.json['status'] === 'ok';
    } catch {
      return false;
    }
  }

  /** Stops the heartbeat (the server unloads the session's models after its timeout); requests,
   * retries and future polls still in flight reject as closed. */
  async close(): Promise<void> {
    this.session.close();
  }

  private assertOpen(): void {
    if (this.session.closed) throw new Error(`trainer endpoint '${this.config.name}' is closed`);
  }
}
