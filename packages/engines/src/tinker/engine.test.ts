// Contract tests of the Tinker-compatible client against the fake trainer over loopback HTTP.
import { afterEach, describe, expect, it } from 'vitest';
import { TINKER_CAPS, adam, startTinker } from '../../test/tinker-harness.ts';
import { fakeTimers, manualScheduler } from '../../test/fake-timers.ts';
import { FakeTinkerServer } from '../../test/tinker/fake-server.ts';
import { TinkerTrainerEngine } from './engine.ts';
import type { EngineError } from '../http/errors.ts';
import type { Datum, TrainerCapabilities } from '../types.ts';
import type { TinkerEndpointConfig } from './config.ts';
import { fakeLogprob } from '../../test/tinker/losses.ts';
import type { FakeTinkerOptions } from '../../test/tinker/fake-server.ts';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
});

const setup = (server: FakeTinkerOptions = {}, config: Partial<TinkerEndpointConfig> = {}) =>
  startTinker(open, server, config);

const sftDatum: Datum = {
  modelInput: [1, 2, 3],
  lossFnInputs: {
    target_tokens: Int32Array.from([2, 3, 4]),
    weights: Float32Array.from([0, 1, 1]),
  },
};

describe('Tinker sessions and models', () => {
  it('creates a session with tags + sdk_version and sends X-API-Key', async () => {
    const { fake, engine } = await setup({ apiKey: 'key-1' }, { apiKey: 'key-1', tags: ['run-7'] });
    expect(fake.requests[0]).toMatchObject({
      route: 'create_session',
      body: { tags: ['run-7'], sdk_version: '0.24.1' },
      headers: { 'x-api-key': 'key-1' },
    });
    expect(engine.sessionId).toBe('session-1');
    expect(await engine.healthy()).toBe(true);
  });

  it('fails to connect with a wrong API key, saying what the server said', async () => {
    await expect(setup({ apiKey: 'key-1' }, { apiKey: 'nope' })).rejects.toThrow(
      /trainer endpoint 'tinker-test' \(http:\/\/127\.0\.0\.1:\d+\/api\/v1\/create_session\): HTTP 401: Invalid API key/,
    );
  });

  it('heartbeats on every scheduler tick and stops on close', async () => {
    const { fake, engine, scheduler } = await setup({}, { heartbeatIntervalMs: 10_000 });
    expect(scheduler.active).toBe(1);
    await engine.heartbeat();
    await engine.heartbeat();
    expect(fake.sessions.get(engine.sessionId)).toBe(2);
    expect(fake.requestsTo('session_heartbeat')[0]).toEqual({ session_id: engine.sessionId });
    await engine.close();
    expect(scheduler.active).toBe(0);
    await engine.heartbeat();
    expect(fake.sessions.get(engine.sessionId)).toBe(2);
  });

  it('reports a lost session (404 heartbeat) as an event and an error', async () => {
    const { fake, engine, events } = await setup();
    fake.sessions.delete(engine.sessionId);
    await expect(engine.heartbeat()).rejects.toThrow('HTTP 404: Session session-1 not found');
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'session:heartbeat_failed', sessionId: 'session-1' }),
    );
  });

  // tinker SDK types/lora_config.py@d595dc2b: train_unembed, train_mlp, train_attn default true;
  // Anneal sends all three so hosted Tinker trains only what vLLM can serve (no unembedding).
  it('creates a model with lora_config (the trained layers explicit) and reads it back with get_info', async () => {
    const { fake, engine } = await setup();
    const model = await engine.createModel({ baseModel: 'Qwen/Qwen3-8B', loraRank: 32, seed: 3 });
    expect(fake.requestsTo('create_model')[0]).toEqual({
      session_id: 'session-1',
      base_model: 'Qwen/Qwen3-8B',
      lora_config: { rank: 32, seed: 3, train_attn: true, train_mlp: true, train_unembed: false },
      model_role: 'policy',
      model_seq_id: 0,
    });
    expect(await model.getInfo()).toEqual({
      model_id: model.id,
      status: 'ready',
      model_data: {
        base_model: 'Qwen/Qwen3-8B',
        lora_config: { rank: 32, seed: 3, train_attn: true, train_mlp: true, train_unembed: false },
        model_name: 'Qwen/Qwen3-8B',
      },
    });
  });

  it('refuses value-head models on a backend without bradley_terry', async () => {
    const { fake, engine } = await setup();
    await expect(
      engine.createModel({ baseModel: 'b', loraRank: 8, head: 'value' }),
    ).rejects.toThrow('value-head models (rm runs) need a backend with the bradley_terry loss');
    expect(fake.requestsTo('create_model')).toHaveLength(0);
  });

  it('sends head: value (Anneal extension) to an rm-capable backend', async () => {
    const caps: TrainerCapabilities = { ...TINKER_CAPS, kinds: ['rm'], losses: ['bradley_terry'] };
    const { fake, engine } = await setup({}, { capabilities: caps });
    await engine.createModel({ baseModel: 'b', loraRank: 8, head: 'value' });
    expect(fake.requestsTo('create_model')[0]).toMatchObject({ head: 'value' });
  });
});

describe('Tinker training operations', () => {
  it('forward_backward sends wire datums with a seq_id and polls the future through 408s', async () => {
    const { fake, engine, time } = await setup({ pendingPolls: 2 });
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    const result = await model.forwardBackward([sftDatum], 'cross_entropy');
    expect(fake.requestsTo('forward_backward')[0]).toEqual({
      model_id: model.id,
      seq_id: 1,
      forward_backward_input: {
        loss_fn: 'cross_entropy',
        data: [
          {
            model_input: { chunks: [{ type: 'encoded_text', tokens: [1, 2, 3] }] },
            loss_fn_inputs: {
              target_tokens: { data: [2, 3, 4], dtype: 'int64', shape: [3] },
              weights: { data: [0, 1, 1], dtype: 'float32', shape: [3] },
            },
          },
        ],
      },
    });
    const expected = [2, 3, 4].map((t) => fakeLogprob(t, 0));
    expect(Array.from(result.logprobs[0] ?? [])).toEqual(Array.from(Float32Array.from(expected)));
    expect(result.metrics['loss:sum']).toBeCloseTo(-(expected[1]! + expected[2]!), 10);
    expect(fake.requestsTo('retrieve_future')).toHaveLength(3); // 408, 408, 200
    expect(time.sleeps).toEqual([100, 150]); // poll backoff: initial 100 ms, x1.5
  });

  it('sends large batches in chunks with consecutive seq_ids and sums loss:sum', async () => {
    const { fake, engine } = await setup({ pendingPolls: 1 }, { maxDatumsPerRequest: 2 });
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    const batch = [sftDatum, sftDatum, sftDatum, sftDatum, sftDatum];
    const whole = await model.forwardBackward(batch, 'cross_entropy');
    const sent = fake.requestsTo('forward_backward') as Array<{
      seq_id: number;
      forward_backward_input: { data: unknown[] };
    }>;
    expect(sent.map((b) => [b.seq_id, b.forward_backward_input.data.length])).toEqual([
      [1, 2],
      [2, 2],
      [3, 1],
    ]);
    expect(whole.logprobs).toHaveLength(5);
    const one = -(fakeLogprob(3, 0) + fakeLogprob(4, 0));
    expect(whole.metrics['loss:sum']).toBeCloseTo(5 * one, 6);
  });

  it('forward uses forward_input; ppo passes its clip thresholds', async () => {
    const { fake, engine } = await setup({ pendingPolls: 0 });
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    const rlDatum: Datum = {
      modelInput: [5, 6],
      lossFnInputs: {
        target_tokens: Int32Array.from([6, 7]),
        logprobs: Float32Array.from([-1, -1]),
        advantages: Float32Array.from([1, -1]),
      },
    };
    const forward = await model.forward([rlDatum], 'importance_sampling');
    expect(fake.requestsTo('forward')[0]).toHaveProperty(
      'forward_input.loss_fn',
      'importance_sampling',
    );
    const logp = [6, 7].map((t) => fakeLogprob(t, 0));
    const ratio = logp.map((l) => Math.exp(l + 1));
    expect(forward.metrics['loss:sum']).toBeCloseTo(-ratio[0]! + ratio[1]!, 6);
    const clip = { clipLowThreshold: 0.9, clipHighThreshold: 1.1 };
    const ppo = await model.forwardBackward([rlDatum], 'ppo', clip);
    expect(fake.requestsTo('forward_backward')[0]).toHaveProperty(
      'forward_backward_input.loss_fn_config',
      { clip_low_threshold: 0.9, clip_high_threshold: 1.1 },
    );
    const clipped = ratio.map((r) => Math.min(Math.max(r, 0.9), 1.1));
    const expected = -Math.min(ratio[0]!, clipped[0]!) - Math.min(-ratio[1]!, -clipped[1]!);
    expect(ppo.metrics['loss:sum']).toBeCloseTo(expected, 6);
  });

  it.each([
    ['skyrl', 0.5],
    ['anneal', 0.5],
    ['none', null],
  ] as const)('optim_step reads the %s grad norm (never invents one)', async (flavor, norm) => {
    const { fake, engine } = await setup({ gradNorm: flavor, pendingPolls: 0 });
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    await model.optimStep(adam);
    const second = await model.optimStep({ ...adam, gradClipNorm: 1 });
    expect(second.gradNorm).toBe(norm);
    expect(fake.requestsTo('optim_step')).toEqual([
      {
        model_id: model.id,
        seq_id: 1,
        adam_params: { learning_rate: 1e-4, beta1: 0.9, beta2: 0.95, eps: 1e-12, weight_decay: 0 },
      },
      {
        model_id: model.id,
        seq_id: 2,
        adam_params: {
          learning_rate: 1e-4,
          beta1: 0.9,
          beta2: 0.95,
          eps: 1e-12,
          weight_decay: 0,
          grad_clip_norm: 1,
        },
      },
    ]);
  });

  it('saves, restores and exports weights for the sampler', async () => {
    const { engine } = await setup({ pendingPolls: 1 });
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    await model.optimStep(adam);
    const path = await model.saveWeights('step-1');
    expect(path).toBe(`tinker://${model.id}/weights/step-1`);
    const restored = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    await restored.loadWeights(path, { optimizer: true });
    const out = await restored.forward([sftDatum], 'cross_entropy');
    expect(out.logprobs[0]?.[0]).toBeCloseTo(fakeLogprob(2, 1), 6); // one step of training restored
    expect(await model.saveWeightsForSampler('sampler-1')).toEqual({
      name: 'sampler-1',
      path: `tinker://${model.id}/sampler-1`,
    });
    await expect(model.saveWeights('bad name')).rejects.toThrow('must match');
  });

  it('surfaces a failed future (400 {detail}) with the operation and request id', async () => {
    const { engine } = await setup({ pendingPolls: 1 });
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    const error = (await model
      .loadWeights('tinker://nowhere/weights/x', { optimizer: true })
      .catch((e: unknown) => e)) as EngineError;
    expect(error.code).toBe('ANNEAL_ERR_TRAINER_FUTURE_FAILED');
    expect(error.message).toMatch(
      /load_weights \(model model-\d+, seq_id 1\): request req-\d+ failed: Checkpoint not found: tinker:\/\/nowhere\/weights\/x$/,
    );
  });

  it('stops polling at the operation deadline', async () => {
    const { engine, time } = await setup(
      { pendingPolls: 1_000_000 },
      { futurePoll: { initialDelayMs: 100, maxDelayMs: 1000, factor: 2, deadlineMs: 5000 } },
    );
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    const error = (await model.optimStep(adam).catch((e: unknown) => e)) as EngineError;
    expect(error.code).toBe('ANNEAL_ERR_TRAINER_FUTURE_TIMEOUT');
    expect(error.message).toMatch(
      /not done after 5000 ms \(operation deadline 5000 ms, \d+ polls; last: pending\)/,
    );
    expect(time.sleeps.slice(0, 5)).toEqual([100, 200, 400, 800, 1000]);
    expect(time.sleeps.reduce((a, b) => a + b, 0)).toBe(5000);
  });

  it('checks losses and inputs before sending', async () => {
    const { fake, engine } = await setup();
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    await expect(model.forwardBackward([sftDatum], 'bradley_terry')).rejects.toThrow(
      "loss 'bradley_terry' is not supported by this backend",
    );
    const short = {
      ...sftDatum,
      lossFnInputs: { ...sftDatum.lossFnInputs, weights: Float32Array.from([1]) },
    };
    await expect(model.forwardBackward([short], 'cross_entropy')).rejects.toThrow(
      'data[0].lossFnInputs.weights has 1 values for 3 input tokens',
    );
    await expect(model.forwardBackward([sftDatum], 'ppo')).rejects.toThrow(
      "data[0].lossFnInputs.logprobs is required by loss 'ppo'",
    );
    expect(fake.requestsTo('forward_backward')).toHaveLength(0);
  });
});

describe('closing an endpoint with work in flight', () => {
  // A worker shutting down closes its engines; what they still have in flight must end then,
  // not retry against a server that is gone: the retry's backoff timer would hold the process.
  it('ends a future poll that is retrying: the operation rejects as closed', async () => {
    const fake = await FakeTinkerServer.start({ pendingPolls: 1 });
    open.push(fake);
    const time = fakeTimers();
    let retries = 0;
    const engine: TinkerTrainerEngine = await TinkerTrainerEngine.connect(
      { name: 'closing', baseUrl: fake.url, capabilities: TINKER_CAPS },
      {
        timers: time.timers,
        scheduler: manualScheduler(),
        onEvent: (event) => {
          if (event.type !== 'future:poll_retry') return;
          retries += 1;
          if (retries === 3) void engine.close(); // during the third retry's backoff
        },
      },
    );
    open.push(engine);
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    const unavailable = { kind: 'reply' as const, status: 503, body: { detail: 'restarting' } };
    fake.enqueue('retrieve_future', ...Array.from({ length: 50 }, () => unavailable));
    await expect(model.optimStep(adam)).rejects.toThrow("trainer endpoint 'closing' is closed");
    expect(retries).toBe(3);
    expect(fake.requestsTo('retrieve_future')).toHaveLength(3); // none after close
    expect(time.sleeps).toHaveLength(2); // the third backoff never ran
    await expect(model.optimStep(adam)).rejects.toThrow(/is closed/);
  });

  it('ends a request between its retries', async () => {
    const fake = await FakeTinkerServer.start();
    open.push(fake);
    const time = fakeTimers();
    const engine: TinkerTrainerEngine = await TinkerTrainerEngine.connect(
      { name: 'closing', baseUrl: fake.url, capabilities: TINKER_CAPS },
      {
        timers: time.timers,
        scheduler: manualScheduler(),
        onEvent: (event) => {
          if (event.type === 'request:retry') void engine.close();
        },
      },
    );
    open.push(engine);
    const unavailable = { kind: 'reply' as const, status: 503, body: { detail: 'restarting' } };
    fake.enqueue('create_model', unavailable, unavailable, unavailable);
    await expect(engine.createModel({ baseModel: 'b', loraRank: 8 })).rejects.toThrow(
      "trainer endpoint 'closing' is closed",
    );
    expect(fake.requestsTo('create_model')).toHaveLength(1);
  });
});
