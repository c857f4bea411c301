// Failure handling of the Tinker client over loopback: idempotent seq_id retries, 409, 422,
// 5xx retries with backoff, exhausted retries, failures while polling.
import { afterEach, describe, expect, it } from 'vitest';
import { adam, startTinker } from '../../test/tinker-harness.ts';
import { EngineError } from '../http/errors.ts';
import type { TinkerEndpointConfig } from './config.ts';
import type { FakeTinkerOptions } from '../../test/tinker/fake-server.ts';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
});
const setup = (server: FakeTinkerOptions = {}, config: Partial<TinkerEndpointConfig> = {}) =>
  startTinker(open, server, config);

describe('Tinker client reliability', () => {
  it('retries a POST whose reply was lost with the same seq_id, running it once', async () => {
    const { fake, engine, time } = await setup({ pendingPolls: 0 });
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    fake.enqueue('optim_step', { kind: 'lose-reply' });
    const result = await model.optimStep(adam);
    const sent = fake.requestsTo('optim_step');
    expect(sent).toHaveLength(2);
    expect(sent[1]).toEqual(sent[0]);
    expect(sent[0]).toHaveProperty('seq_id', 1);
    expect(fake.models.get(model.id)?.steps).toBe(1); // not stepped twice
    expect(result.gradNorm).toBe(1);
    expect(time.sleeps).toHaveLength(1);
  });

  it('surfaces a 409 when a seq_id is reused with another payload, without retrying', async () => {
    const { fake, engine } = await setup({ pendingPolls: 0 });
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    await model.optimStep(adam); // seq_id 1
    // Re-attaching to the model without continuing its seq_ids reuses seq_id 1: a real conflict.
    const stale = engine.attachModel(model.id);
    const error = (await stale
      .optimStep({ ...adam, learningRate: 2e-4 })
      .catch((e: unknown) => e)) as EngineError;
    expect(error).toBeInstanceOf(EngineError);
    expect(error.code).toBe('ANNEAL_ERR_TRAINER_SEQ_ID_CONFLICT');
    expect(error.status).toBe(409);
    expect(error.message).toContain(
      'seq_id 1 was already used with a different payload (the server keeps one request per ' +
        '(model_id, seq_id)): Training request sequence number was reused',
    );
    expect(fake.requestsTo('optim_step')).toHaveLength(2);
    await expect(engine.attachModel(model.id, 2).saveWeights('ckpt')).resolves.toContain('ckpt');
  });

  it('reports a reused checkpoint name as such, not as a seq_id conflict (SkyRL 409)', async () => {
    const { fake, engine } = await setup({ pendingPolls: 0 });
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    await model.saveWeightsForSampler('export-1');
    const error = (await model
      .saveWeightsForSampler('export-1')
      .catch((e: unknown) => e)) as EngineError;
    expect(error.code).toBe('ANNEAL_ERR_TRAINER_CHECKPOINT_EXISTS');
    expect(error.status).toBe(409);
    expect(error.message).toContain(
      'a checkpoint with this name already exists for the model (the server keeps one ' +
        `checkpoint per (model_id, name); save under a new name): Checkpoint 'export-1' ` +
        `already exists for model '${model.id}'`,
    );
    expect(error.message).not.toContain('seq_id');
    expect(fake.requestsTo('save_weights_for_sampler')).toHaveLength(2); // never retried
  });

  it('recovers a save whose reply was lost: SkyRL answers the resend 409, the save did happen', async () => {
    const { fake, engine } = await setup({ pendingPolls: 0 });
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    fake.enqueue('save_weights_for_sampler', { kind: 'lose-reply' });
    const saved = await model.saveWeightsForSampler('run-sampler-1');
    expect(saved).toEqual({
      name: 'run-sampler-1',
      path: `tinker://${model.id}/sampler_weights/run-sampler-1`,
    });
    expect(fake.requestsTo('save_weights_for_sampler')).toHaveLength(2); // sent, resent -> 409
    fake.enqueue('save_weights', { kind: 'lose-reply' });
    await expect(model.saveWeights('step-1')).resolves.toBe(`tinker://${model.id}/weights/step-1`);
  });

  it('surfaces 422 validation issues with their loc and msg', async () => {
    const { fake, engine } = await setup();
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    fake.enqueue('forward_backward', {
      kind: 'reply',
      status: 422,
      body: {
        detail: [
          {
            loc: ['body', 'forward_backward_input', 'data', 0, 'loss_fn_inputs'],
            msg: 'Field required',
            type: 'missing',
          },
          { loc: ['body', 'seq_id'], msg: 'Input should be a valid integer', type: 'int_type' },
        ],
      },
    });
    const datum = {
      modelInput: [1],
      lossFnInputs: { target_tokens: Int32Array.from([2]), weights: Float32Array.from([1]) },
    };
    const error = (await model
      .forwardBackward([datum], 'cross_entropy')
      .catch((e: unknown) => e)) as EngineError;
    expect(error.code).toBe('ANNEAL_ERR_TRAINER_VALIDATION');
    expect(error.message).toContain(
      'HTTP 422 validation failed: body.forward_backward_input.data.0.loss_fn_inputs: Field required; ' +
        'body.seq_id: Input should be a valid integer',
    );
    expect(fake.requestsTo('forward_backward')).toHaveLength(1);
  });

  it("answers the fake server's own 422 for a malformed body", async () => {
    const { fake, engine } = await setup();
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    // The client validates names itself; a raw request shows the server's pydantic reply.
    const reply = await fetch(`${fake.url}/api/v1/save_weights`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model_id: model.id, path: 'a/b' }),
    });
    expect(reply.status).toBe(422);
    expect(await reply.json()).toEqual({
      detail: [
        {
          loc: ['body', 'path'],
          msg: "String should match pattern '^[a-zA-Z0-9_-]+$'",
          type: 'string_pattern_mismatch',
        },
      ],
    });
  });

  it('retries 5xx and dropped connections with growing jittered delays, then succeeds', async () => {
    const { fake, engine, time, events } = await setup({ pendingPolls: 0 });
    fake.enqueue(
      'create_model',
      { kind: 'reply', status: 503, body: { detail: 'busy' } },
      { kind: 'drop' },
    );
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    expect(model.id).toMatch(/^model-/);
    expect(fake.requestsTo('create_model')).toHaveLength(3);
    expect(time.sleeps[0]).toBeGreaterThanOrEqual(50);
    expect(time.sleeps[0]).toBeLessThanOrEqual(100);
    expect(time.sleeps[1]).toBeGreaterThanOrEqual(100);
    expect(time.sleeps[1]).toBeLessThanOrEqual(200);
    expect(events.filter((e) => e.type === 'request:retry')).toHaveLength(2);
  });

  it('gives up after the configured attempts with the server message', async () => {
    const { fake, engine } = await setup();
    const busy = { kind: 'reply' as const, status: 500, body: { detail: 'XLA out of memory' } };
    fake.enqueue('create_model', busy, busy, busy);
    const error = (await engine
      .createModel({ baseModel: 'b', loraRank: 8 })
      .catch((e: unknown) => e)) as EngineError;
    expect(error.message).toBe(
      `trainer endpoint 'tinker-test' (${fake.url}/api/v1/create_model): HTTP 500: XLA out of memory ` +
        '(gave up after 3 attempts)',
    );
  });

  it('retries a 5xx while polling a future, keeping the same request id', async () => {
    const { fake, engine } = await setup({ pendingPolls: 1 });
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    fake.enqueue('retrieve_future', {
      kind: 'reply',
      status: 502,
      body: { detail: 'bad gateway' },
    });
    await expect(model.saveWeights('s1')).resolves.toContain('/weights/s1');
    const polled = fake.requestsTo('retrieve_future') as Array<{ request_id: string }>;
    expect(new Set(polled.map((p) => p.request_id)).size).toBe(1);
    expect(polled).toHaveLength(3); // 502 (retried), 408, 200
  });

  it('does not retry a 4xx on a POST', async () => {
    const { fake, engine, time } = await setup();
    fake.enqueue('create_model', {
      kind: 'reply',
      status: 404,
      body: { detail: 'Session session-1 not found' },
    });
    await expect(engine.createModel({ baseModel: 'b', loraRank: 8 })).rejects.toThrow(
      'HTTP 404: Session session-1 not found',
    );
    expect(time.sleeps).toEqual([]);
  });
});
