// One model on a Tinker-compatible server (a `model_id`): training operations as futures.
// Each operation gets the next `seq_id` of this model; retries resend the same seq_id, so a
// request that reached the server before its reply was lost is not run twice. A 409 means
// a seq_id was reused with a different payload and surfaces as an error
// (ANNEAL_ERR_TRAINER_SEQ_ID_CONFLICT), never retried.
import { processBytePool } from '../http/byte-pool.ts';
import { ENGINE_ERROR_CODES, EngineError } from '../http/errors.ts';
import { JsonBytesWriter, JsonText } from '../http/json-text.ts';
import { isObject } from '../http/request.ts';
import type {
  AdamParams,
  Datum,
  ForwardResult,
  LoadWeightsOptions,
  LossFn,
  LossFnConfig,
  OptimStepResult,
  SamplerWeights,
  TrainerCapabilities,
  TrainerModel,
} from '../types.ts';
import { combineMetrics } from './metrics.ts';
import {
  checkLossInputs,
  fromWireForward,
  fromWireOptimStep,
  toWireAdam,
  checkWireDatum,
  expectedBodyBytes,
  writeWireDatum,
  toWireLossConfig,
} from './convert.ts';
import { isFutureReply, operationDeadline, readResultOf, resultOf } from './futures.ts';
import type { FutureResult, ResultReader } from './futures.ts';
import { readForwardResult } from './forward-reader.ts';
import type { TinkerTransport } from './transport.ts';
import {
  CHECKPOINT_NAME_PATTERN,
  TINKER_ROUTES,
  checkpointRoute,
  parseSamplerPath,
  parseWeightsPath,
} from './wire.ts';
import type * as Wire from './wire.ts';

export class TinkerTrainerModel implements TrainerModel {
  private nextSeqId: number;

  constructor(
    readonly id: string,
    private readonly transport: TinkerTransport,
    private readonly capabilities: TrainerCapabilities,
    firstSeqId = 1,
    private readonly maxDatumsPerRequest = 128,
  ) {
    if (!Number.isInteger(firstSeqId) || firstSeqId < 0) {
      throw new RangeError(`firstSeqId must be an integer >= 0, got ${firstSeqId}`);
    }
    this.nextSeqId = firstSeqId;
  }

  forward(data: readonly Datum[], lossFn: LossFn, config?: LossFnConfig): Promise<ForwardResult> {
    return this.lossOp(TINKER_ROUTES.forward, 'forward_input', data, lossFn, config);
  }

  forwardBackward(
    data: readonly Datum[],
    lossFn: LossFn,
    config?: LossFnConfig,
  ): Promise<ForwardResult> {
    return this.lossOp(
      TINKER_ROUTES.forwardBackward,
      'forward_backward_input',
      data,
      lossFn,
      config,
    );
  }

  async optimStep(params: AdamParams): Promise<OptimStepResult> {
    if (!(params.learningRate >= 0)) {
      throw new RangeError(`optim_step: learningRate must be >= 0, got ${params.learningRate}`);
    }
    const result = await this.run(TINKER_ROUTES.optimStep, { adam_params: toWireAdam(params) });
    return fromWireOptimStep(result);
  }

  async saveWeights(name: string): Promise<string> {
    checkName(name, 'saveWeights');
    const result = await this.save(TINKER_ROUTES.saveWeights, name, 'training');
    return this.readPath(result, TINKER_ROUTES.saveWeights);
  }

  /** `load_weights` with `optimizer` as asked: the tinker SDK's `load_state` sends false and
   * `load_state_with_optimizer` true (src/tinker/lib/public_interfaces/training_client.py
   * `_load_state_impl`); SkyRL defaults an absent field to true, so it is always sent. */
  async loadWeights(path: string, options: LoadWeightsOptions): Promise<void> {
    if (!path) throw new RangeError('loadWeights: path is empty');
    const body: Omit<Wire.LoadWeightsRequest, 'model_id'> = { path, optimizer: options.optimizer };
    await this.run(TINKER_ROUTES.loadWeights, body);
  }

  async saveWeightsForSampler(name: string): Promise<SamplerWeights> {
    checkName(name, 'saveWeightsForSampler');
    const result = await this.save(TINKER_ROUTES.saveWeightsForSampler, name, 'sampler');
    return { name, path: this.readPath(result, TINKER_ROUTES.saveWeightsForSampler) };
  }

  /**
   * Deletes a sampler export (DELETE `training_runs/<model_id>/checkpoints/sampler_weights/<name>`,
   * served by SkyRL and hosted Tinker): exports get unique names per step, so a run deletes
   * each one once the next is served. 204 = deleted, 404 = already gone (false).
   */
  async deleteSamplerWeights(path: string): Promise<boolean> {
    const parsed = parseSamplerPath(path);
    if (!parsed) {
      throw new RangeError(
        `deleteSamplerWeights: ${JSON.stringify(path)} is not tinker://<model_id>/<name> or ` +
          'tinker://<model_id>/sampler_weights/<name>',
      );
    }
    const route = checkpointRoute(parsed.modelId, `sampler_weights/${parsed.name}`);
    const reply = await this.transport.delete(route, { accept: [404] });
    return reply.status !== 404;
  }

  /**
   * Deletes a training checkpoint (DELETE `training_runs/<model_id>/checkpoints/weights/<name>`:
   * SkyRL's delete_checkpoint, the tinker SDK's `delete_checkpoint`): checkpoint retention. The
   * model id is the path's, so a checkpoint an earlier attempt's model saved is deleted too.
   * 204 = deleted, 404 = already gone (false).
   */
  async deleteWeights(path: string): Promise<boolean> {
    const parsed = parseWeightsPath(path);
    if (!parsed) {
      throw new RangeError(
        `deleteWeights: ${JSON.stringify(path)} is not tinker://<model_id>/weights/<name>`,
      );
    }
    const route = checkpointRoute(parsed.modelId, `weights/${parsed.name}`);
    const reply = await this.transport.delete(route, { accept: [404] });
    return reply.status !== 404;
  }

  /** `unload_model` (a future): the server frees the model. A backend without the route (404)
   * keeps it until the session ends; that is not an error. */
  async release(): Promise<void> {
    const body: Wire.UnloadModelRequest = { model_id: this.id, type: 'unload_model' };
    const reply = await this.transport.post(TINKER_ROUTES.unloadModel, body, { accept: [404] });
    if (reply.status === 404) return;
    if (isFutureReply(reply.json)) {
      await resultOf(this.transport, reply.json, `unload_model (model ${this.id})`);
    }
  }

  /** `get_info`: the server's view of this model. */
  async getInfo(): Promise<Wire.GetInfoResponse> {
    const body: Wire.GetInfoRequest = { model_id: this.id };
    const reply = await this.transport.post(TINKER_ROUTES.getInfo, body);
    const info = reply.json;
    if (!isObject(info) || info['model_id'] !== this.id || !isObject(info['model_data'])) {
      throw this.malformed(TINKER_ROUTES.getInfo, `get_info reply ${reply.text.slice(0, 200)}`);
    }
    return info as unknown as Wire.GetInfoResponse;
  }

  private async lossOp(
    route: string,
    key: 'forward_input' | 'forward_backward_input',
    data: readonly Datum[],
    lossFn: LossFn,
    config: LossFnConfig | undefined,
  ): Promise<ForwardResult> {
    if (!this.capabilities.losses.includes(lossFn)) {
      throw new EngineError(
        ENGINE_ERROR_CODES.unsupported,
        this.transport.context(route),
        `loss '${lossFn}' is not supported by this backend (it declares ` +
          `[${this.capabilities.losses.join(', ')}])`,
      );
    }
    if (data.length === 0) throw new RangeError(`${route}: data is empty`);
    checkLossInputs(data, lossFn);
    data.forEach((datum, i) => checkWireDatum(datum, i));
    const lossConfig = toWireLossConfig(config);
    // Large batches go in chunks (gradients accumulate until optim_step): all chunks are
    // submitted in seq_id order first, then their futures are awaited together. Each request
    // is written as bytes straight from the datums' typed arrays (writeWireDatum).
    const size = this.maxDatumsPerRequest;
    const pending: Array<{ count: number; result: Promise<FutureResult<ForwardResult>> }> = [];
    for (let start = 0; start < data.length; start += size) {
      const datums = data.slice(start, start + size);
      const body = (seqId: number) => {
        const writer = new JsonBytesWriter(expectedBodyBytes(datums), processBytePool).raw(
          `{"model_id":${JSON.stringify(this.id)},"${key}":{"data":[`,
        );
        datums.forEach((datum, i) => {
          if (i > 0) writer.raw(',');
          writeWireDatum(writer, datum);
        });
        const input: Omit<Wire.ForwardBackwardInput, 'data'> = { loss_fn: lossFn };
        if (lossConfig) input.loss_fn_config = lossConfig;
        writer.raw(`],${JSON.stringify(input).slice(1, -1)}},"seq_id":${seqId}}`);
        return new JsonText(writer.finish(), () => writer.release());
      };
      const count = datums.length;
      // The result is read from the reply's bytes; a reply it does not expect is parsed whole.
      const read = (bytes: Uint8Array) => readForwardResult(bytes, count);
      const result = await this.submit(route, body, read);
      pending.push({ count, result: result.result });
    }
    const parts = await Promise.all(
      pending.map(async ({ count, result }) => {
        try {
          const done = await result;
          const output = done.kind === 'read' ? done.value : fromWireForward(done.value, count);
          return { count, output };
        } catch (error) {
          if (error instanceof EngineError) throw error;
          throw this.malformed(route, (error as Error).message);
        }
      }),
    );
    const metrics =
      parts.length === 1
        ? (parts[0] as (typeof parts)[number]).output.metrics
        : combineMetrics(parts.map((p) => ({ metrics: p.output.metrics, weight: p.count })));
    return { logprobs: parts.flatMap((p) => p.output.logprobs), metrics };
  }

  /** POST with this model's next seq_id; `result` waits for its future. Awaiting the POST
   * itself keeps seq_ids in submission order. */
  private async submit<T = never>(
    route: string,
    payload: Record<string, unknown> | ((seqId: number) => JsonText),
    read?: ResultReader<T>,
  ): Promise<{ result: Promise<FutureResult<T>> }> {
    const seqId = this.nextSeqId;
    this.nextSeqId += 1;
    const deadline = operationDeadline(this.transport); // one deadline: submission to result
    // `payload`'s members with model_id and seq_id, or the whole body written for this seq_id
    const body =
      typeof payload === 'function'
        ? payload(seqId)
        : { model_id: this.id, ...payload, seq_id: seqId };
    const reply = await this.transport.post(route, body, { seqId });
    if (body instanceof JsonText) body.release(); // a 2xx reply: the server read all of it
    const label = `${route} (model ${this.id}, seq_id ${seqId})`;
    const result = readResultOf(this.transport, reply.json, label, deadline, read);
    result.catch(() => undefined); // handled by whoever awaits it
    return { result };
  }

  /**
   * A save. SkyRL records the checkpoint name before it queues the save and does not dedupe
   * saves by seq_id (skyrl/tinker/api.py save_weights), so when a save's reply is lost and the
   * client resends it, the resend gets 409 "already exists" — from the save that did reach the
   * server. Only in that case (the 409 answered a resend after a lost reply; names are never
   * reused otherwise) the client waits for the checkpoint to be listed as complete and returns
   * its path instead of failing the save.
   */
  private async save(route: string, name: string, type: 'training' | 'sampler'): Promise<unknown> {
    const deadline = operationDeadline(this.transport);
    try {
      return await this.run(route, { path: name });
    } catch (error) {
      const resent =
        error instanceof EngineError &&
        error.code === ENGINE_ERROR_CODES.checkpointExists &&
        this.transport.answeredResendAfterLostReply(error);
      if (!resent) throw error;
      return { path: await this.listedCheckpoint(name, type, deadline) };
    }
  }

  /** Polls `GET training_runs/<id>/checkpoints` (complete checkpoints only) for `name`. */
  private async listedCheckpoint(
    name: string,
    type: 'training' | 'sampler',
    deadline: number,
  ): Promise<string> {
    const { timers, config } = this.transport;
    const route = `training_runs/${encodeURIComponent(this.id)}/checkpoints`;
    let delay = config.futurePoll.initialDelayMs;
    for (;;) {
      const reply = await this.transport.get(route);
      const listed = isObject(reply.json) ? reply.json['checkpoints'] : undefined;
      const found = Array.isArray(listed)
        ? listed.find(
            (c: unknown) =>
              isObject(c) && c['checkpoint_id'] === name && c['checkpoint_type'] === type,
          )
        : undefined;
      if (isObject(found) && typeof found['tinker_path'] === 'string') return found['tinker_path'];
      const remaining = deadline - timers.now();
      if (remaining <= 0) {
        throw new EngineError(
          ENGINE_ERROR_CODES.futureTimeout,
          this.transport.context(route),
          `checkpoint '${name}' of model ${this.id} (resent after a lost reply) was not listed ` +
            `as complete before the operation deadline (${config.futurePoll.deadlineMs} ms)`,
        );
      }
      await timers.sleep(Math.min(delay, remaining), this.transport.signal);
      delay = Math.min(delay * config.futurePoll.factor, config.futurePoll.maxDelayMs);
    }
  }

  private async run(route: string, payload: Record<string, unknown>): Promise<unknown> {
    return (await (await this.submit(route, payload)).result).value;
  }

  private readPath(result: unknown, route: string): string {
    if (isObject(result) && typeof result['path'] === 'string') return result['path'];
    throw this.malformed(route, `result has no path: ${JSON.stringify(result)?.slice(0, 200)}`);
  }

  private malformed(route: string, detail: string): EngineError {
    return new EngineError(ENGINE_ERROR_CODES.response, this.transport.context(route), detail);
  }
}

function checkName(name: string, operation: string): void {
  if (!CHECKPOINT_NAME_PATTERN.test(name)) {
    throw new RangeError(
      `${operation}: checkpoint name ${JSON.stringify(name)} must match ${CHECKPOINT_NAME_PATTERN}`,
    );
  }
}
