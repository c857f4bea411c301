// An in-repo Tinker-compatible server over real HTTP (node:http, ephemeral port) for
// contract tests, answering exactly the JSON of docs/engines.md: futures that stay pending
// (408) for `pendingPolls` polls, 400 `{detail}` for failed futures, 409 when a seq_id is
// reused with another payload, 422 pydantic issues, `X-API-Key`, scripted faults.
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TINKER_API_PREFIX } from '../wire.ts';
import type * as Wire from '../wire.ts';
import { computeLoss } from './losses.ts';
import { validate } from './validate-request.ts';

export type ScriptedReply =
  | { kind: 'reply'; status: number; body: unknown } // instead of handling the request
  | { kind: 'drop' } // destroy the socket before handling
  | { kind: 'lose-reply' }; // handle the request, then destroy the socket (reply lost)

export interface FakeTinkerOptions {
  apiKey?: string;
  /** 408s a future answers before its result (default 2). */
  pendingPolls?: number;
  /** Which grad-norm metric optim_step reports. */
  gradNorm?: 'skyrl' | 'anneal' | 'none';
}

interface Future {
  result?: unknown;
  error?: string;
  polls: number;
}

interface FakeModel {
  baseModel: string;
  lora: Wire.LoraConfig;
  steps: number;
  saved: Set<string>;
}

export class FakeTinkerServer {
  readonly requests: Array<{ route: string; body: unknown; headers: IncomingMessage['headers'] }> =
    [];
  readonly script = new Map<string, ScriptedReply[]>();
  readonly sessions = new Map<string, number>(); // session id -> heartbeats
  readonly models = new Map<string, FakeModel>();
  /** The next future created fails with this detail. */
  failNextFuture: string | undefined;
  private readonly futures = new Map<string, Future>();
  private readonly seqIds = new Map<string, { payload: string; requestId: string }>();
  private counter = 0;
  private readonly server: Server;
  private readonly options: Required<Omit<FakeTinkerOptions, 'apiKey'>> & FakeTinkerOptions;

  private constructor(options: FakeTinkerOptions) {
    this.options = { pendingPolls: 2, gradNorm: 'skyrl', ...options };
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
    this.requests.push({ route, body, headers: req.headers });
    const scripted = this.script.get(route)?.shift();
    if (scripted?.kind === 'drop') return void req.socket.destroy();
    if (scripted?.kind === 'reply') return send(res, scripted.status, scripted.body);
    if (this.options.apiKey && req.headers['x-api-key'] !== this.options.apiKey) {
      return send(res, 401, { detail: 'Invalid API key' });
    }
    if (route === 'healthz') return send(res, 200, { status: 'ok' });
    const issues = validate(route, body);
    if (issues.length > 0) return send(res, 422, { detail: issues });
    const [status, reply] = this.route(route, body as Record<string, unknown>);
    if (scripted?.kind === 'lose-reply') return void req.socket.destroy();
    send(res, status, reply);
  }

  private route(route: string, body: Record<string, unknown>): [number, unknown] {
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
    this.models.set(id, {
      baseModel: body.base_model,
      lora: body.lora_config,
      steps: 0,
      saved: new Set(),
    });
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
  private submit(route: string, body: Record<string, unknown>): [number, unknown] {
    const modelId = body['model_id'] as string;
    const model = this.models.get(modelId);
    if (!model) return [404, { detail: `Model ${modelId} not found` }];
    const seqId = body['seq_id'];
    const payload = JSON.stringify({ route, body });
    const key = `${modelId}#${String(seqId)}`;
    if (seqId !== undefined) {
      const seen = this.seqIds.get(key);
      if (seen && seen.payload !== payload) {
        return [
          409,
          {
            detail: `seq_id ${String(seqId)} already used for model ${modelId} with a different request`,
          },
        ];
      }
      if (seen) return [200, { request_id: seen.requestId, status: 'pending', model_id: modelId }];
    }
    const requestId = `req-${++this.counter}`;
    if (seqId !== undefined) this.seqIds.set(key, { payload, requestId });
    const future: Future = { polls: 0 };
    if (this.failNextFuture !== undefined) {
      future.error = this.failNextFuture;
      this.failNextFuture = undefined;
    } else {
      const outcome = this.execute(route, modelId, model, body);
      if (typeof outcome === 'string') future.error = outcome;
      else future.result = outcome.result;
    }
    this.futures.set(requestId, future);
    const reply: Wire.UntypedFuture = {
      request_id: requestId,
      status: 'pending',
      model_id: modelId,
    };
    return [200, reply];
  }

  private execute(
    route: string,
    id: string,
    model: FakeModel,
    body: Record<string, unknown>,
  ): { result: unknown } | string {
    if (route === 'forward_backward' || route === 'forward') {
      const input = body[
        route === 'forward' ? 'forward_input' : 'forward_backward_input'
      ] as Wire.ForwardBackwardInput;
      return { result: computeLoss(input.data, input.loss_fn, input.loss_fn_config, model.steps) };
    }
    if (route === 'optim_step') {
      const params = body['adam_params'] as Wire.AdamParams;
      model.steps += 1;
      const norm = 1 / model.steps;
      const metrics: Record<string, Record<string, number>> = {
        skyrl: { 'skyrl.ai/grad_norm': norm, 'skyrl.ai/learning_rate': params.learning_rate },
        anneal: { 'grad_norm:last': norm },
        none: {},
      };
      return { result: { metrics: metrics[this.options.gradNorm] } };
    }
    const name = body['path'] as string;
    if (route === 'save_weights') {
      model.saved.add(name);
      return { result: { path: `tinker://${id}/weights/${name}`, type: 'save_weights' } };
    }
    if (route === 'load_weights') {
      const match = /^tinker:\/\/([^/]+)\/weights\/(.+)$/.exec(name);
      const source = match ? this.models.get(match[1] as string) : undefined;
      if (!match || !source?.saved.has(match[2] as string)) return `Checkpoint not found: ${name}`;
      model.steps = source.steps;
      return { result: { type: 'load_weights', path: name } };
    }
    const sampler: Wire.SaveWeightsForSamplerResponse = {
      path: `tinker://${id}/${name}`,
      type: 'save_weights_for_sampler',
      sampling_session_id: null,
    };
    return { result: sampler };
  }

  private retrieve(requestId: string): [number, unknown] {
    const future = this.futures.get(requestId);
    if (!future) return [404, { detail: `Request ${requestId} not found` }];
    future.polls += 1;
    if (future.polls <= this.options.pendingPolls)
      return [408, { detail: 'Request still pending' }];
    if (future.error !== undefined) return [400, { detail: future.error }];
    return [200, future.result];
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}
