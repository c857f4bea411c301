// An in-repo Tinker-compatible server over real HTTP (node:http, ephemeral port) for contract
// tests, in two flavours that answer as the real servers do (fake-flavors.ts names the upstream
// file and commit of each behaviour):
//   - `skyrl` (SkyRL's Tinker server, skyrl/tinker/api.py): a pending retrieve_future is held
//     `holdMs` (300 s) before its 408 — the hold advances the test's fake clock, so a client
//     whose call timeout is shorter sees its call time out, as it would for real; failed
//     futures are 400 `{detail}`; a reused checkpoint name is 409 "Checkpoint '…' already
//     exists"; grad_clip_norm is dropped; optim_step reports `skyrl.ai/grad_norm`.
//   - `tinker` (hosted Tinker, as the tinker SDK reads it): 200 `try_again`, 410 for an
//     expired promise, 200 `{error, category}`, POST replies without `status`, create_model as a
//     future with a required model_seq_id, the archive route's 503/302 to a signed URL.
// Both: `X-API-Key`, 422 pydantic issues, 409 for a reused seq_id, sampling sessions + asample,
// checkpoint delete, and scripted faults (`enqueue`). Each backend's state and arithmetic too
// (docs/engines.md "Conformance"): the loss reduction over the weights received and the gradient
// each optim_step applies (losses.ts, `appliedGradients`), and what sampling a checkpoint does to
// the model's adapter slot (adapter-slots.ts, `overwrites`); `skyrlBackend` picks JAX or FSDP.
// Each model's weights and Adam state (fake-optimizer.ts, `models.get(id).training`): a
// load_weights with `optimizer: false` keeps the new model's fresh optimizer, as SkyRL does.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TINKER_API_PREFIX } from '../../src/tinker/wire.ts';
import type * as Wire from '../../src/tinker/wire.ts';
import { CheckpointRoutes } from './fake-checkpoints.ts';
import { FLAVORS } from './fake-flavors.ts';
import type { FakeFlavor, FlavorBehaviour } from './fake-flavors.ts';
import { fakeSample } from './fake-sampling.ts';
import { sampledWeights, type SlotOverwrite } from './adapter-slots.ts';
import { computeLoss, heldAsFloat32, type DatumGradient, type FakeBackend } from './losses.ts';
import { validate } from './validate-request.ts';
import {
  adamUpdate,
  copyTrainingState,
  createTrainingState,
  loadTrainingState,
  paramGradient,
  type FakeTrainingState,
} from './fake-optimizer.ts';

export type { FakeFlavor } from './fake-flavors.ts';
export type { FakeBackend } from './losses.ts';
export type { SlotOverwrite } from './adapter-slots.ts';
export type { FakeTrainingState } from './fake-optimizer.ts';

export type ScriptedReply =
  | { kind: 'reply'; status: number; body: unknown; headers?: Record<string, string> }
  | { kind: 'drop' } // destroy the socket before handling
  | { kind: 'lose-reply' }; // handle the request, then destroy the socket (reply lost)

export interface FakeTinkerOptions {
  /** Which server to imitate (default `skyrl`). */
  flavor?: FakeFlavor;
  /** SkyRL flavour: the backend behind the server (default `jax`). It decides the loss
   * reduction (losses.ts) and what sampling a checkpoint does (FakeTinkerServer.asample):
   * `jax` loads it into the model's one adapter slot, the weights being trained; `fsdp` ignores
   * it and samples the model's last synced weights, and serves one model only. */
  skyrlBackend?: 'jax' | 'fsdp';
  apiKey?: string;
  /** "Still pending" answers a future gives before its result (default 2). */
  pendingPolls?: number;
  /** Which grad-norm metric optim_step reports (default: `skyrl` for SkyRL, `none` for
   * hosted Tinker, whose metric keys the SDK does not document). */
  gradNorm?: 'skyrl' | 'anneal' | 'none';
  /** SkyRL flavour: how long a pending retrieve_future is held before its 408 (default
   * 300 000 ms, RETRIEVE_FUTURE_TIMEOUT_SECONDS). Only observable with `clock`. */
  holdMs?: number;
  /** The test's fake clock; a SkyRL hold advances it by `holdMs`. */
  clock?: { advance(ms: number): void };
  /** Hosted Tinker flavour: 503s the archive route answers before its redirect (default 0). */
  archivePreparing?: number;
  /** SkyRL flavour: the server's checkpoints base on disk. Sampler exports are written there as
   * `{base}/{model_id}/sampler_weights/{name}.tar.gz` (skyrl/tinker/engine.py
   * save_sampler_checkpoint; a LoRA adapter tarball as the JAX backend writes it), where a vLLM
   * endpoint's `adapters.root` can read them. */
  checkpointsBase?: string;
  /** Answers asample instead of the deterministic fake sampler (tests that script rollouts);
   * `weights` are the optimiser steps of the weights sampled (adapter-slots.ts). */
  sampler?: (request: Wire.AsampleRequest, weights: { steps: number }) => Wire.SampleResponse;
  /** Compute time per training operation (benchmarks): a model runs its operations one after
   * another, each future ready this long after the one before it finished. A SkyRL
   * retrieve_future is held until its future is ready (at most `holdMs`); hosted Tinker answers
   * `try_again` until then. Default: every operation instant. */
  latencyMs?: Partial<Record<TrainingOperation, number>>;
  /** Compute time in proportion to the tokens a forward or forward_backward carries, plus the
   * server's fixed cost of a call (benchmarks); replaces `latencyMs` for those operations. */
  tokenLatency?: TokenLatency;
  /** One compute queue for all models (benchmarks of runs sharing a trainer): SkyRL's engine
   * serves every model's requests from one loop on one device mesh
   * (skyrl-tx/tx/tinker/engine.py@009abdce `process_pending_requests`), so one model's operation
   * waits for the others' before it. Default: a queue per model. */
  sharedCompute?: boolean;
}

/** An operation's compute time: `callMs` + the request's tokens × `msPerToken[op]`. */
export interface TokenLatency {
  /** What any call costs before its compute: SkyRL's engine picks pending requests up on a
   * 100 ms polling loop (skyrl-tx/tx/tinker/engine.py@009abdce `process_pending_requests`:
   * `time.sleep(0.1)`), so a queued call waits up to that long; scale it as the bench scales
   * time. */
  callMs: number;
  msPerToken: Partial<Record<'forward' | 'forward_backward', number>>;
}

/** Tokens of a forward/forward_backward request's data (model_input chunks). */
function requestTokens(input: Wire.ForwardBackwardInput | undefined): number {
  let tokens = 0;
  for (const datum of input?.data ?? []) {
    for (const chunk of datum.model_input.chunks) tokens += chunk.tokens.length;
  }
  return tokens;
}

/** The queued operations of a model whose compute time `latencyMs` sets. */
export type TrainingOperation =
  | 'forward'
  | 'forward_backward'
  | 'optim_step'
  | 'save_weights'
  | 'load_weights'
  | 'save_weights_for_sampler';

interface Future {
  result?: unknown;
  error?: string;
  polls: number;
  expired?: boolean;
  /** Date.now() at which the operation's compute is done (absent: at once). */
  readyAt?: number;
}

/** The gradient one optim_step applied: every datum accumulated since the step before, in
 * arrival order, with ∂L/∂logπ of each target token after the backend's whole reduction. */
export interface AppliedGradient {
  data: Wire.Datum[];
  lossFn: Wire.WireLossFn;
  dLogp: number[][];
  /** π_train's logprobs of each datum's targets at which the gradient was taken. */
  logprobs: number[][];
  /** The Adam settings the server applied: SkyRL FSDP takes the learning rate only
   * (skyrl_train_backend.py optim_step: set_lr; the rest is fixed at optimizer creation). */
  adam: Partial<Wire.AdamParams>;
}

interface FakeModel {
  baseModel: string;
  lora: Wire.LoraConfig;
  /** The weights being trained (the model's adapter slot): optimiser steps they hold. */
  steps: number;
  /** skyrl-jax: the sampler checkpoint last loaded into the slot (`loaded_checkpoint_id`). */
  loadedSampler: string | undefined;
  /** skyrl-fsdp: steps of the weights last synced to its inference engines. */
  synced: number;
  /** skyrl-fsdp: why the model cannot be used (a second model on a single-tenant server). */
  unavailable: string | undefined;
  /** Gradients accumulated since the last optim_step, one per datum. */
  pending: { data: Wire.Datum[]; lossFn: Wire.WireLossFn; gradients: DatumGradient[] };
  applied: AppliedGradient[];
  saved: Map<string, number>; // training checkpoint name -> steps
  /** The weights and Adam state being trained (fake-optimizer.ts). */
  training: FakeTrainingState;
  /** Training checkpoint name -> the weights and optimizer state it saved. */
  savedTraining: Map<string, FakeTrainingState>;
  sampler: Map<string, number>; // sampler checkpoint name -> steps
  /** grad_clip_norm of the last optim_step as the server applied it (undefined = none). */
  lastClip: number | undefined;
  /** Date.now() at which the model's queued operations are done (`latencyMs`). */
  busyUntil: number;
}

type Json = Record<string, unknown>;

export class FakeTinkerServer {
  readonly requests: Array<{
    method: string;
    route: string;
    body: unknown;
    headers: IncomingMessage['headers'];
  }> = [];
  readonly script = new Map<string, ScriptedReply[]>();
  readonly sessions = new Map<string, number>(); // session id -> heartbeats
  readonly models = new Map<string, FakeModel>();
  /** sampling session id -> where it samples from. */
  readonly samplingSessions = new Map<string, { modelId?: string; checkpoint?: string }>();
  /** The next future created fails with this detail. */
  failNextFuture: string | undefined;
  /** Hosted Tinker flavour: the next future created answers 410 (expired) when polled. */
  expireNextFuture = false;
  /** Every time sampling a checkpoint replaced a model's training weights (skyrl-jax). */
  readonly overwrites: SlotOverwrite[] = [];
  readonly flavor: FakeFlavor;
  /** The server arithmetic and sampling semantics this fake reproduces. */
  readonly backend: FakeBackend;
  private readonly behaviour: FlavorBehaviour;
  private readonly futures = new Map<string, Future>();
  private readonly seqIds = new Map<string, { payload: string; requestId: string }>();
  private readonly checkpointRoutes: CheckpointRoutes;
  private counter = 0;
  /** The shared compute queue (`sharedCompute`). */
  private readonly compute = { busyUntil: 0 };
  private readonly server: Server;
  private readonly options: FakeTinkerOptions & { pendingPolls: number; holdMs: number };

  private constructor(options: FakeTinkerOptions) {
    this.flavor = options.flavor ?? 'skyrl';
    this.behaviour = FLAVORS[this.flavor];
    this.backend =
      this.flavor === 'tinker'
        ? 'tinker'
        : options.skyrlBackend === 'fsdp'
          ? 'skyrl-fsdp'
          : 'skyrl-jax';
    this.options = { pendingPolls: 2, holdMs: 300_000, ...options };
    this.checkpointRoutes = new CheckpointRoutes({
      behaviour: this.behaviour,
      models: this.models,
      url: () => this.url,
      archivePreparing: options.archivePreparing ?? 0,
      ...(options.checkpointsBase !== undefined &&
        this.flavor === 'skyrl' && { samplerFilesBase: options.checkpointsBase }),
    });
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => this.handle(req, res, Buffer.concat(chunks).toString('utf8')));
    });
  }

  static async start(options: FakeTinkerOptions = {}): Promise<FakeTinkerServer> {
    const fake = new FakeTinkerServer(options);
    await new Promise<void>((resolve) => fake.server.listen(0, '127.0.0.1', resolve));
    return fake;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  enqueue(route: string, ...replies: ScriptedReply[]): void {
    this.script.set(route, [...(this.script.get(route) ?? []), ...replies]);
  }

  requestsTo(route: string): unknown[] {
    return this.requests.filter((r) => r.route === route).map((r) => r.body);
  }

  /** The gradients a model's optim_steps applied, in order (see AppliedGradient). */
  appliedGradients(modelId: string): readonly AppliedGradient[] {
    return this.models.get(modelId)?.applied ?? [];
  }

  /** Optimiser steps a model's training weights hold now. */
  trainedSteps(modelId: string): number | undefined {
    return this.models.get(modelId)?.steps;
  }

  /** The archive a sampler checkpoint downloads as: a .tar.gz of a LoRA adapter directory. */
  archiveBytes(modelId: string, name: string): Buffer {
    return this.checkpointRoutes.archiveBytes(modelId, name);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse, raw: string): void {
    const path = (req.url ?? '/').split('?')[0] as string;
    const route = path.startsWith(`${TINKER_API_PREFIX}/`)
      ? path.slice(TINKER_API_PREFIX.length + 1)
      : path;
    let body: unknown;
    try {
      body = raw ? JSON.parse(raw) : undefined;
    } catch {
      return send(res, 422, {
        detail: [{ loc: ['body'], msg: 'JSON decode error', type: 'json_invalid' }],
      });
    }
    const method = req.method ?? 'GET';
    this.requests.push({ method, route, body, headers: req.headers });
    const scripted = this.script.get(route)?.shift();
    if (scripted?.kind === 'drop') return void req.socket.destroy();
    if (scripted?.kind === 'reply') {
      return send(res, scripted.status, scripted.body, scripted.headers);
    }
    if (route.startsWith('/signed/')) return this.checkpointRoutes.signedDownload(res, route);
    if (this.options.apiKey && req.headers['x-api-key'] !== this.options.apiKey) {
      return send(res, 401, { detail: 'Invalid API key' });
    }
    if (route === 'healthz') return send(res, 200, { status: 'ok' });
    if (route.startsWith('training_runs/')) {
      return this.checkpointRoutes.handle(res, method, route);
    }
    const issues = validate(route, body);
    if (this.behaviour.requiresModelSeqId && route === 'create_model') {
      const seq = (body as Json | undefined)?.['model_seq_id'];
      if (!Number.isInteger(seq)) {
        issues.push({ loc: ['body', 'model_seq_id'], msg: 'Field required', type: 'missing' });
      }
    }
    if (issues.length > 0) return send(res, 422, { detail: issues });
    const hold = route === 'retrieve_future' ? this.retrieveHoldMs(body as Json) : 0;
    if (hold > 0) {
      this.holdUntil(Date.now() + hold, () => this.answer(req, res, route, body as Json, scripted));
      return;
    }
    this.answer(req, res, route, body as Json, scripted);
  }

  /** Calls `then` once Date.now() has reached `until`. A timer is not enough: it runs on the
   * event loop's cached time, which can lag Date.now(), so it may fire a few ms early — and a
   * future ready at `until` then answered 408 as if still pending. */
  private holdUntil(until: number, then: () => void): void {
    const left = until - Date.now();
    if (left <= 0) return then();
    setTimeout(() => this.holdUntil(until, then), left).unref();
  }

  /** SkyRL holds a retrieve_future until its future is ready, at most `holdMs`. */
  private retrieveHoldMs(body: Json): number {
    const future = this.futures.get(body['request_id'] as string);
    if (this.behaviour.pending !== 'hold-then-408' || future?.readyAt === undefined) return 0;
    if (future.polls < this.options.pendingPolls) return 0; // the scripted pending answers first
    return Math.min(Math.max(0, future.readyAt - Date.now()), this.options.holdMs);
  }

  private answer(
    req: IncomingMessage,
    res: ServerResponse,
    route: string,
    body: Json,
    scripted: ScriptedReply | undefined,
  ): void {
    const [status, reply] = this.route(route, body);
    if (scripted?.kind === 'lose-reply') return void req.socket.destroy();
    if (route === 'retrieve_future' && status === 408) {
      // skyrl/tinker/api.py wait_for_future: the call is held before the 408.
      this.options.clock?.advance(this.options.holdMs);
    }
    send(res, status, reply);
  }

  private route(route: string, body: Json): [number, unknown] {
    switch (route) {
      case 'create_session': {
        const id = `session-${++this.counter}`;
        this.sessions.set(id, 0);
        return [200, { session_id: id, type: 'create_session', info_message: null }];
      }
      case 'session_heartbeat': {
        const id = body['session_id'] as string;
        const beats = this.sessions.get(id);
        if (beats === undefined) return [404, { detail: `Session ${id} not found` }];
        this.sessions.set(id, beats + 1);
        return [200, { type: 'session_heartbeat' }];
      }
      case 'create_model':
        return this.createModel(body as unknown as Wire.CreateModelRequest);
      case 'get_info': {
        const id = body['model_id'] as string;
        const model = this.models.get(id);
        if (!model) return [404, { detail: `Model ${id} not found` }];
        const data = {
          base_model: model.baseModel,
          lora_config: model.lora,
          model_name: model.baseModel,
        };
        return [200, { model_id: id, status: 'ready', model_data: data }];
      }
      case 'retrieve_future':
        return this.retrieve(body['request_id'] as string);
      case 'create_sampling_session':
        return this.createSamplingSession(body as unknown as Wire.CreateSamplingSessionRequest);
      case 'asample':
        return this.asample(body as unknown as Wire.AsampleRequest);
      case 'forward_backward':
      case 'forward':
      case 'optim_step':
      case 'save_weights':
      case 'load_weights':
      case 'save_weights_for_sampler':
        return this.submit(route, body);
      default:
        return [404, { detail: 'Not Found' }];
    }
  }

  private createModel(body: Wire.CreateModelRequest): [number, unknown] {
    if (!this.sessions.has(body.session_id))
      return [404, { detail: `Session ${body.session_id} not found` }];
    const id = `model-${++this.counter}`;
    // skyrl/backends/skyrl_train_backend.py create_model: a second policy registers another LoRA
    // adapter, which the FSDP worker does not implement (workers/worker.py register_adapter).
    const unavailable =
      this.backend === 'skyrl-fsdp' && this.models.size > 0
        ? 'FSDPPolicyWorker.register_adapter is not implemented: multi-tenant LoRA adapter management (the adapter store) is currently only supported on the Megatron backend. The FSDP backend supports a single LoRA adapter (or full fine-tuning) per worker group.'
        : undefined;
    this.models.set(id, {
      baseModel: body.base_model,
      lora: body.lora_config,
      steps: 0,
      loadedSampler: undefined,
      synced: 0,
      unavailable,
      pending: { data: [], lossFn: 'importance_sampling', gradients: [] },
      applied: [],
      saved: new Map(),
      training: createTrainingState(),
      savedTraining: new Map(),
      sampler: new Map(),
      lastClip: undefined,
      busyUntil: 0,
    });
    if (this.behaviour.createModel === 'future') {
      return [
        200,
        this.newFuture({ polls: 0, result: { model_id: id, type: 'create_model' } }, id),
      ];
    }
    const reply: Wire.CreateModelResponse = {
      model_id: id,
      base_model: body.base_model,
      lora_config: body.lora_config,
      status: 'created',
      request_id: `req-${++this.counter}`,
    };
    return [200, reply];
  }

  /** Async operations: idempotent by (model_id, seq_id); 409 on a reused seq_id. */
  private submit(route: string, body: Json): [number, unknown] {
    const modelId = body['model_id'] as string;
    const model = this.models.get(modelId);
    if (!model) return [404, { detail: `Model ${modelId} not found` }];
    const isSave = route === 'save_weights' || route === 'save_weights_for_sampler';
    const seqId = isSave && !this.behaviour.savesDedupeBySeqId ? undefined : body['seq_id'];
    const payload = JSON.stringify({ route, body });
    const key = `${modelId}#${String(seqId)}`;
    if (seqId !== undefined) {
      const seen = this.seqIds.get(key);
      // skyrl/tinker/api.py create_future: 409 "Training request sequence number was reused".
      if (seen && seen.payload !== payload) {
        return [409, { detail: 'Training request sequence number was reused' }];
      }
      if (seen) return [200, this.futureReply(seen.requestId, modelId)];
    }
    if (isSave) {
      const name = body['path'] as string;
      const taken = route === 'save_weights' ? model.saved : model.sampler;
      // skyrl/tinker/api.py create_checkpoint: IntegrityError on (model_id, checkpoint_id, type).
      if (taken.has(name)) {
        return [409, { detail: `Checkpoint '${name}' already exists for model '${modelId}'` }];
      }
    }
    const future: Future = { polls: 0 };
    if (this.failNextFuture !== undefined) {
      future.error = this.failNextFuture;
      this.failNextFuture = undefined;
    } else if (model.unavailable !== undefined) {
      future.error = model.unavailable;
    } else {
      const outcome = this.execute(route, modelId, model, body);
      if (typeof outcome === 'string') future.error = outcome;
      else future.result = outcome.result;
    }
    const latency = this.latencyOf(route, body);
    if (latency !== undefined) {
      const queue = this.options.sharedCompute ? this.compute : model;
      queue.busyUntil = Math.max(Date.now(), queue.busyUntil) + latency;
      future.readyAt = queue.busyUntil;
    }
    const reply = this.newFuture(future, modelId);
    if (seqId !== undefined) this.seqIds.set(key, { payload, requestId: reply.request_id });
    return [200, reply];
  }

  /** Compute time of an operation (`tokenLatency`, else `latencyMs`); undefined = instant. */
  private latencyOf(route: string, body: Json): number | undefined {
    const perToken = this.options.tokenLatency;
    if (perToken && (route === 'forward' || route === 'forward_backward')) {
      const input = body[route === 'forward' ? 'forward_input' : 'forward_backward_input'];
      const tokens = requestTokens(input as Wire.ForwardBackwardInput | undefined);
      return perToken.callMs + tokens * (perToken.msPerToken[route] ?? 0);
    }
    return this.options.latencyMs?.[route as TrainingOperation];
  }

  private newFuture(future: Future, modelId: string | undefined): Wire.UntypedFuture {
    const requestId = `req-${++this.counter}`;
    if (this.expireNextFuture) {
      future.expired = true;
      this.expireNextFuture = false;
    }
    this.futures.set(requestId, future);
    return this.futureReply(requestId, modelId);
  }

  private futureReply(requestId: string, modelId: string | undefined): Wire.UntypedFuture {
    if (this.behaviour.futureStatus) {
      return { request_id: requestId, future_id: requestId, status: 'pending', model_id: modelId };
    }
    return { request_id: requestId, model_id: modelId } as Wire.UntypedFuture;
  }

  private execute(
    route: string,
    id: string,
    model: FakeModel,
    body: Json,
  ): { result: unknown } | string {
    if (route === 'forward_backward' || route === 'forward') {
      const input = body[
        route === 'forward' ? 'forward_input' : 'forward_backward_input'
      ] as Wire.ForwardBackwardInput;
      const data = heldAsFloat32(input.data);
      const loss = computeLoss(
        data,
        input.loss_fn,
        input.loss_fn_config,
        model.steps,
        this.backend,
      );
      if (route === 'forward_backward') {
        model.pending.data.push(...data);
        model.pending.gradients.push(...loss.gradients);
        model.pending.lossFn = input.loss_fn;
      }
      return { result: loss.output };
    }
    if (route === 'optim_step') return { result: this.optimStep(model, body) };
    const name = body['path'] as string;
    if (route === 'save_weights') {
      model.saved.set(name, model.steps);
      model.savedTraining.set(name, copyTrainingState(model.training));
      return { result: { path: `tinker://${id}/weights/${name}`, type: 'save_weights' } };
    }
    if (route === 'load_weights') {
      const match = /^tinker:\/\/([^/]+)\/weights\/(.+)$/.exec(name);
      const source = match ? this.models.get(match[1] as string) : undefined;
      const steps = source?.saved.get(match![2] as string);
      const saved = source?.savedTraining.get(match![2] as string);
      if (steps === undefined || saved === undefined) return `Checkpoint not found: ${name}`;
      model.steps = steps;
      // skyrl/tinker/api.py LoadWeightsRequest: `optimizer` absent = true.
      model.training = loadTrainingState(saved, model.training, body['optimizer'] !== false);
      return { result: { type: 'load_weights', path: name } };
    }
    model.sampler.set(name, model.steps);
    model.synced = model.steps; // skyrl_train_backend.py save_sampler_checkpoint: NCCL sync first
    if (this.options.checkpointsBase !== undefined && this.flavor === 'skyrl') {
      const dir = join(this.options.checkpointsBase, id, 'sampler_weights');
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `${name}.tar.gz`), this.archiveBytes(id, name));
    }
    const sampler: Wire.SaveWeightsForSamplerResponse = {
      path:
        this.behaviour.samplerPathKind === 'bare'
          ? `tinker://${id}/${name}`
          : `tinker://${id}/sampler_weights/${name}`,
      type: 'save_weights_for_sampler',
      sampling_session_id: null,
    };
    return { result: sampler };
  }

  private optimStep(model: FakeModel, body: Json): Wire.OptimStepResponse {
    const params = body['adam_params'] as Wire.AdamParams;
    // skyrl/backends/jax.py AccumulatedGradients.get_mean: the accumulated sum over the datums
    // since the last step; the summing backends apply the sum as it is.
    const count = model.pending.gradients.length;
    const scale = this.backend === 'skyrl-jax' && count > 0 ? 1 / count : 1;
    const applied: AppliedGradient = {
      data: model.pending.data,
      lossFn: model.pending.lossFn,
      dLogp: model.pending.gradients.map((g) => g.dLogp.map((d) => d * scale)),
      logprobs: model.pending.gradients.map((g) => g.logprobs),
      adam: this.appliedAdam(params),
    };
    model.applied.push(applied);
    adamUpdate(model.training, paramGradient(applied.data, applied.dLogp), applied.adam);
    model.pending = { data: [], lossFn: 'importance_sampling', gradients: [] };
    model.steps += 1;
    const clip = params.grad_clip_norm;
    model.lastClip =
      this.behaviour.appliesGradClip && clip !== undefined && clip > 0 ? clip : undefined;
    const norm = 1 / model.steps;
    const flavour = this.options.gradNorm ?? (this.flavor === 'skyrl' ? 'skyrl' : 'none');
    const metrics: Record<string, Record<string, number>> = {
      // skyrl/backends/jax.py OptimStepMetrics.to_output_metrics.
      skyrl: { 'skyrl.ai/grad_norm': norm, 'skyrl.ai/learning_rate': params.learning_rate },
      anneal: { 'grad_norm:last': norm },
      none: {},
    };
    return { metrics: metrics[flavour] as Record<string, number> };
  }

  /** skyrl/tinker/api.py AdamParams has no grad_clip_norm (dropped); the FSDP backend sets the
   * learning rate only. */
  private appliedAdam(params: Wire.AdamParams): Partial<Wire.AdamParams> {
    if (this.backend === 'skyrl-fsdp') return { learning_rate: params.learning_rate };
    if (this.behaviour.appliesGradClip) return { ...params };
    const { grad_clip_norm: _dropped, ...kept } = params;
    return kept;
  }

  private retrieve(requestId: string): [number, unknown] {
    const future = this.futures.get(requestId);
    // skyrl/tinker/api.py retrieve_future: 404 "Future not found".
    if (!future) return [404, { detail: 'Future not found' }];
    // src/tinker/lib/api_future_impl.py: 410 = promise expired (RetryableException).
    if (future.expired) return [410, { detail: `Promise expired for request ${requestId}` }];
    future.polls += 1;
    if (future.polls <= this.options.pendingPolls || (future.readyAt ?? 0) > Date.now()) {
      return this.behaviour.pending === 'hold-then-408'
        ? [408, { detail: 'Timeout waiting for result' }]
        : [200, { type: 'try_again', request_id: requestId, queue_state: 'active' }];
    }
    if (future.error !== undefined) {
      return this.behaviour.failure === '400-detail'
        ? [400, { detail: future.error }]
        : [200, { error: future.error, category: 'user' }];
    }
    return [200, future.result];
  }

  /** skyrl/tinker/api.py create_sampling_session; SDK internal_client_holder.py. */
  private createSamplingSession(body: Wire.CreateSamplingSessionRequest): [number, unknown] {
    if (!this.sessions.has(body.session_id)) return [404, { detail: 'Session not found' }];
    if ((body.model_path === undefined) === (body.base_model === undefined)) {
      return [400, { detail: 'Exactly one of base_model or model_path must be provided' }];
    }
    const target = body.model_path === undefined ? {} : this.samplerTarget(body.model_path);
    if (typeof target === 'string') return [404, { detail: target }];
    const id = `sampling_${++this.counter}`;
    this.samplingSessions.set(id, target);
    const reply: Wire.CreateSamplingSessionResponse = {
      sampling_session_id: id,
      type: 'create_sampling_session',
    };
    return [200, reply];
  }

  /** `tinker://<id>/<name>` or `tinker://<id>/sampler_weights/<name>` (skyrl/tinker/api.py asample). */
  private samplerTarget(path: string): { modelId: string; checkpoint: string } | string {
    const match = /^tinker:\/\/([^/]+)\/(?:sampler_weights\/)?([^/]+)$/.exec(path);
    const model = match && this.models.get(match[1] as string);
    if (!match || !model?.sampler.has(match[2] as string)) {
      return `Checkpoint not found: ${path}`;
    }
    return { modelId: match[1] as string, checkpoint: match[2] as string };
  }

  private asample(body: Wire.AsampleRequest): [number, unknown] {
    let target: { modelId?: string; checkpoint?: string } | string;
    if (body.sampling_session_id !== undefined) {
      target = this.samplingSessions.get(body.sampling_session_id) ?? 'Sampling session not found';
    } else if (body.model_path !== undefined) target = this.samplerTarget(body.model_path);
    else target = {};
    if (typeof target === 'string') return [404, { detail: target }];
    const weights = this.samplingWeights(target);
    const future: Future =
      typeof weights === 'string'
        ? { polls: 0, error: weights }
        : {
            polls: 0,
            result: (this.options.sampler ?? fakeSample)(body, { steps: weights }),
          };
    return [200, this.newFuture(future, target.modelId)];
  }

  private samplingWeights(target: { modelId?: string; checkpoint?: string }): number | string {
    const model = target.modelId === undefined ? undefined : this.models.get(target.modelId);
    const found =
      model === undefined
        ? undefined
        : { modelId: target.modelId!, slot: model, checkpoint: target.checkpoint! };
    return sampledWeights(this.backend, found, this.overwrites);
  }
}

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  // with its content-length, as SkyRL's FastAPI server sends it: Starlette's
  // `Response.init_headers` sets it from the rendered body (starlette/responses.py@1f6b2305)
  const text = body === undefined ? '' : JSON.stringify(body); // undefined: a bare reply
  res
    .writeHead(status, {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(text)),
      ...headers,
    })
    .end(text);
}
