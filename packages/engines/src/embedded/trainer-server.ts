// The embedded trainer served over the Tinker-compatible HTTP subset of docs/engines.md
// (node:http, JSON only), so the production Tinker client is exercised end to end. Training
// compute runs in the trainer's worker threads; this event loop only parses and routes.
// Errors use the wire's FastAPI shapes: `{detail}` (404, 408, 409, 400) and 422
// `{detail: [{loc, msg, type}]}`.
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type * as Wire from '../tinker/wire.ts';
import { TINKER_API_PREFIX, TINKER_ROUTES } from '../tinker/wire.ts';
import {
  object,
  optionalInteger,
  parseAdam,
  parseLossCall,
  string,
  toWireForward,
  ValidationError,
} from './server-wire.ts';
import { FutureStore, HttpError, readJson } from './server-futures.ts';
import { resolveTinkerPath, tinkerSamplerUri, tinkerWeightsUri } from './tinker-paths.ts';
import type { EmbeddedTrainer } from './trainer.ts';
import type { EmbeddedTrainerModel } from './trainer-model.ts';
import { checkName } from './trainer-model.ts';

export interface TrainerServerOptions {
  /** Required `X-API-Key` value; undefined accepts any request. */
  apiKey?: string;
  /** A session's models are released after this long without a heartbeat (default 300 s). */
  sessionTimeoutMs?: number;
  /** Finished futures stay retrievable this long (default 10 min). */
  futureRetentionMs?: number;
  /** Largest request body accepted (default 64 MiB). */
  maxBodyBytes?: number;
}

type Json = Record<string, unknown>;

/** `training_runs/<model_id>/checkpoints/<kind>/<name>` (DELETE). */
const CHECKPOINT_ROUTE = /^training_runs\/([^/]+)\/checkpoints\/(.+)$/;
interface Hosted {
  model: EmbeddedTrainerModel;
  sessionId: string;
  baseModel: string;
  loraConfig: Wire.LoraConfig;
}

export class EmbeddedTrainerServer {
  private readonly server: Server;
  private readonly sessions = new Map<string, { lastSeen: number; models: Set<string> }>();
  private readonly models = new Map<string, Hosted>();
  private readonly futures = new FutureStore();
  private readonly sweeper: NodeJS.Timeout;
  private readonly sessionTimeoutMs: number;
  private readonly futureRetentionMs: number;

  constructor(
    private readonly trainer: EmbeddedTrainer,
    private readonly options: TrainerServerOptions = {},
  ) {
    this.sessionTimeoutMs = options.sessionTimeoutMs ?? 300_000;
    this.futureRetentionMs = options.futureRetentionMs ?? 600_000;
    this.server = createServer((req, res) => void this.handle(req, res));
    const every = Math.min(30_000, Math.max(50, this.sessionTimeoutMs / 4));
    // a failed release means the compute thread is gone; the model is unreachable either way
    this.sweeper = setInterval(() => void this.sweep().catch(() => undefined), every);
    this.sweeper.unref();
  }

  /** Starts listening; returns the base URL (`http://host:port`, routes under /api/v1). */
  listen(port = 0, host = '127.0.0.1'): Promise<string> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        const { port: bound } = this.server.address() as AddressInfo;
        resolve(`http://${host}:${bound}`);
      });
    });
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let status = 200;
    let body: unknown;
    try {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const route = url.pathname.startsWith(`${TINKER_API_PREFIX}/`)
        ? url.pathname.slice(TINKER_API_PREFIX.length + 1)
        : '';
      const deletion = CHECKPOINT_ROUTE.exec(route);
      if (route === TINKER_ROUTES.healthz && req.method === 'GET')
        body = { status: 'ok' } satisfies Wire.HealthzResponse;
      else if (deletion && req.method === 'DELETE') {
        this.authorize(req);
        await this.deleteCheckpoint(
          decodeURIComponent(deletion[1] as string),
          decodeURIComponent(deletion[2] as string),
        );
        res.writeHead(204).end();
        return;
      } else {
        if (!(Object.values(TINKER_ROUTES) as string[]).includes(route))
          throw new HttpError(404, 'Not Found');
        if (req.method !== 'POST') throw new HttpError(405, 'Method Not Allowed');
        this.authorize(req);
        body = await this.route(
          route,
          object(await readJson(req, this.options.maxBodyBytes ?? 64 * 2 ** 20)),
        );
      }
    } catch (err) {
      if (err instanceof ValidationError)
        [status, body] = [422, { detail: err.issues } satisfies Wire.ValidationErrorBody];
      else if (err instanceof HttpError)
        [status, body] = [err.status, { detail: err.message } satisfies Wire.DetailError];
      else [status, body] = [500, { detail: (err as Error).message }];
    }
    const text = JSON.stringify(body);
    res.writeHead(status, {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(text)),
    });
    res.end(text);
  }

  private authorize(req: IncomingMessage): void {
    if (this.options.apiKey !== undefined && req.headers['x-api-key'] !== this.options.apiKey) {
      throw new HttpError(401, 'missing or invalid X-API-Key');
    }
  }

  /**
   * DELETE `training_runs/<model_id>/checkpoints/<kind>/<name>` removes a checkpoint's directory
   * from disk, answering as SkyRL's delete_checkpoint does (skyrl/tinker/api.py @ a9564572): the
   * kind is the path prefix (`weights` or `sampler_weights`; a bare name is a 400), 404 when
   * it is not there, 425 while a training save is still being written (no checkpoint.json yet).
   */
  private async deleteCheckpoint(modelId: string, checkpointPath: string): Promise<void> {
    const [kind, name, ...extra] = checkpointPath.split('/');
    if ((kind !== 'weights' && kind !== 'sampler_weights') || name === undefined || extra.length) {
      throw new HttpError(
        400,
        "Invalid checkpoint identifier. Expected format 'weights/<name>' (training weights) " +
          "or 'sampler_weights/<name>' (sampler weights), where <name> is a single path segment.",
      );
    }
    const uri =
      kind === 'weights' ? tinkerWeightsUri(modelId, name) : tinkerSamplerUri(modelId, name);
    let dir: string;
    try {
      dir = resolveTinkerPath(this.trainer.artifactDir, uri);
    } catch {
      throw new HttpError(422, 'Invalid checkpoint_id');
    }
    if (!existsSync(dir)) throw new HttpError(404, `Checkpoint not found: ${modelId}/${name}`);
    if (kind === 'weights' && !existsSync(path.join(dir, 'checkpoint.json'))) {
      throw new HttpError(425, 'Checkpoint is still being created');
    }
    await rm(dir, { recursive: true, force: true });
  }

  private async route(route: string, body: Json): Promise<unknown> {
    switch (route) {
      case TINKER_ROUTES.createSession: {
        const sessionId = `s-${randomUUID()}`;
        this.sessions.set(sessionId, { lastSeen: Date.now(), models: new Set() });
        return {
          session_id: sessionId,
          type: 'create_session',
        } satisfies Wire.CreateSessionResponse;
      }
      case TINKER_ROUTES.sessionHeartbeat: {
        this.session(string(body, 'session_id')).lastSeen = Date.now();
        return { type: 'session_heartbeat' } satisfies Wire.SessionHeartbeatResponse;
      }
      case TINKER_ROUTES.createModel:
        return this.createModel(body);
      case TINKER_ROUTES.getInfo: {
        const hosted = this.hosted(string(body, 'model_id'), false);
        return {
          model_id: hosted.model.id,
          status: 'ready',
          model_data: {
            base_model: hosted.baseModel,
            lora_config: hosted.loraConfig,
            model_name: hosted.baseModel,
          },
        } satisfies Wire.GetInfoResponse;
      }
      case TINKER_ROUTES.forwardBackward:
      case TINKER_ROUTES.forward: {
        const backward = route === TINKER_ROUTES.forwardBackward;
        const { model } = this.hosted(string(body, 'model_id'));
        const call = parseLossCall(body, backward ? 'forward_backward_input' : 'forward_input');
        return this.enqueue(route, body, async () =>
          toWireForward(
            await model.run(call.data, call.lossFn, call.config, backward),
            model.config.head === 'value',
          ),
        );
      }
      case TINKER_ROUTES.optimStep: {
        const { model } = this.hosted(string(body, 'model_id'));
        const adam = parseAdam(body);
        return this.enqueue(
          route,
          body,
          async () =>
            ({ metrics: (await model.optimStep(adam)).metrics }) satisfies Wire.OptimStepResponse,
        );
      }
      case TINKER_ROUTES.saveWeights:
      case TINKER_ROUTES.saveWeightsForSampler:
        return this.save(route, body);
      case TINKER_ROUTES.loadWeights: {
        const { model } = this.hosted(string(body, 'model_id'));
        const uri = string(body, 'path');
        let dir: string;
        try {
          dir = resolveTinkerPath(this.trainer.artifactDir, uri);
        } catch (err) {
          throw new ValidationError([
            { loc: ['body', 'path'], msg: (err as Error).message, type: 'value_error' },
          ]);
        }
        const optimizer = body['optimizer'] !== false;
        return this.enqueue(route, body, async () => {
          await model.loadWeights(dir, { optimizer });
          return { path: uri, type: 'load_weights' } satisfies Wire.LoadWeightsResponse;
        });
      }
      case TINKER_ROUTES.retrieveFuture:
        return this.futures.retrieve(string(body, 'request_id'));
      case TINKER_ROUTES.unloadModel: {
        const modelId = string(body, 'model_id');
        const hosted = this.hosted(modelId, false);
        this.models.delete(modelId);
        this.sessions.get(hosted.sessionId)?.models.delete(modelId);
        // After the operations already queued on it (the model runs them in order).
        return this.enqueue(route, body, async () => {
          await this.trainer.releaseModel(modelId);
          return { model_id: modelId, type: 'unload_model' } satisfies Wire.UnloadModelResponse;
        });
      }
      default:
        throw new HttpError(
          501,
          `${route} is not served by the embedded trainer (sample with the embedded inference engine)`,
        );
    }
  }

  private async createModel(body: Json): Promise<Wire.CreateModelResponse> {
    const session = this.session(string(body, 'session_id'));
    const baseModel = string(body, 'base_model');
    const lora = object(body['lora_config'], ['lora_config']);
    const rank = optionalInteger(lora, 'rank', ['lora_config']) ?? 0;
    const seed = optionalInteger(lora, 'seed', ['lora_config']);
    const head = body['head'] ?? 'lm';
    if (head !== 'lm' && head !== 'value') {
      throw new ValidationError([
        { loc: ['body', 'head'], msg: "Input should be 'lm' or 'value'", type: 'literal_error' },
      ]);
    }
    let model: EmbeddedTrainerModel;
    try {
      model = await this.trainer.createModel({
        baseModel,
        loraRank: rank,
        head,
        ...(seed === undefined ? {} : { seed }),
      });
    } catch (err) {
      throw new HttpError(400, (err as Error).message);
    }
    if (!this.sessions.has(string(body, 'session_id'))) {
      await this.trainer.releaseModel(model.id); // the session expired while the model was created
      throw new HttpError(404, `session ${string(body, 'session_id')} expired`);
    }
    session.lastSeen = Date.now();
    const loraConfig: Wire.LoraConfig = seed === undefined ? { rank } : { rank, seed };
    this.models.set(model.id, {
      model,
      sessionId: string(body, 'session_id'),
      baseModel,
      loraConfig,
    });
    session.models.add(model.id);
    const response = {
      model_id: model.id,
      base_model: baseModel,
      lora_config: loraConfig,
      status: 'created',
      request_id: '',
    } satisfies Wire.CreateModelResponse;
    response.request_id = this.futures.settled(response);
    return response;
  }

  private save(route: string, body: Json): Wire.UntypedFuture {
    const { model } = this.hosted(string(body, 'model_id'));
    const name = string(body, 'path');
    try {
      checkName(name);
    } catch (err) {
      throw new ValidationError([
        { loc: ['body', 'path'], msg: (err as Error).message, type: 'string_pattern_mismatch' },
      ]);
    }
    if (route === TINKER_ROUTES.saveWeights) {
      return this.enqueue(route, body, async () => {
        await model.saveWeights(name);
        return {
          path: tinkerWeightsUri(model.id, name),
          type: 'save_weights',
        } satisfies Wire.SaveWeightsResponse;
      });
    }
    return this.enqueue(route, body, async () => {
      await model.saveWeightsForSampler(name);
      return {
        path: tinkerSamplerUri(model.id, name),
        type: 'save_weights_for_sampler',
        sampling_session_id: null,
      } satisfies Wire.SaveWeightsForSamplerResponse;
    });
  }

  /** Starts op as a future of this request (idempotent per (model_id, seq_id)). */
  private enqueue(route: string, body: Json, op: () => Promise<unknown>): Wire.UntypedFuture {
    const seqId = optionalInteger(body, 'seq_id');
    return this.futures.start(
      string(body, 'model_id'),
      seqId,
      `${route} ${JSON.stringify(body)}`,
      op,
    );
  }

  private session(id: string) {
    const session = this.sessions.get(id);
    if (!session) throw new HttpError(404, `unknown session_id ${id}`);
    return session;
  }

  /** A hosted model; training with it (`touch`) counts as activity of its session. */
  private hosted(modelId: string, touch = true): Hosted {
    const hosted = this.models.get(modelId);
    if (!hosted) throw new HttpError(404, `unknown model_id ${modelId}`);
    const session = this.sessions.get(hosted.sessionId);
    if (session && touch) session.lastSeen = Date.now();
    return hosted;
  }

  /** Expires silent sessions (releasing their models) and old finished futures. */
  private async sweep(): Promise<void> {
    const now = Date.now();
    this.futures.sweep(this.futureRetentionMs, now);
    for (const [id, session] of this.sessions) {
      if (now - session.lastSeen <= this.sessionTimeoutMs) continue;
      this.sessions.delete(id);
      for (const modelId of session.models) {
        this.models.delete(modelId);
        await this.trainer.releaseModel(modelId);
      }
    }
  }
}
