import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TinkerTrainerEngine } from '../tinker/engine.ts';
import type { AdamParams, Datum } from '../types.ts';
import { EmbeddedInferenceEngine } from './onnx-sampler.ts';
import { DEFAULT_ADAM_PARAMS } from './optimizer.ts';
import { smallConfig, withTempDir } from '../../test/embedded/fixtures.ts';
import { tinkerPathResolver } from './tinker-paths.ts';
import { EMBEDDED_TRAINER_CAPABILITIES, EmbeddedTrainer } from './trainer.ts';
import { EmbeddedTrainerServer } from './trainer-server.ts';

const { head: _head, ...tiny } = smallConfig('lm', 64);
const adam: AdamParams = { ...DEFAULT_ADAM_PARAMS, learningRate: 1e-3 };
let dir: string;
let release: () => void;
let trainer: EmbeddedTrainer;
let server: EmbeddedTrainerServer;
let baseUrl: string;
let client: TinkerTrainerEngine;

beforeAll(async () => {
  await new Promise<void>((ready) => {
    void withTempDir(async (d) => {
      dir = d;
      ready();
      await new Promise<void>((done) => (release = done));
    });
  });
  trainer = new EmbeddedTrainer({ artifactDir: dir, threads: 2, baseModels: { tiny } });
  server = new EmbeddedTrainerServer(trainer, { apiKey: 'k' });
  baseUrl = await server.listen();
  client = await TinkerTrainerEngine.connect({
    name: 'embedded',
    baseUrl,
    apiKey: 'k',
    capabilities: EMBEDDED_TRAINER_CAPABILITIES,
    heartbeatIntervalMs: 0,
    futurePoll: { initialDelayMs: 5, maxDelayMs: 20 },
  });
});
afterAll(async () => {
  await client.close();
  await server.close();
  await trainer.close();
  release();
});

const post = async (route: string, body: unknown, apiKey = 'k') => {
  const res = await fetch(`${baseUrl}/api/v1/${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
};

function sftDatum(text: string): Datum {
  const tokens = Array.from(Buffer.from(text));
  return {
    modelInput: tokens.slice(0, -1),
    lossFnInputs: {
      target_tokens: Int32Array.from(tokens.slice(1)),
      weights: new Float32Array(tokens.length - 1).fill(1),
    },
  };
}

describe('embedded trainer over the Tinker HTTP API, driven by the production client', () => {
  it('trains, checkpoints, exports for the sampler and restores through tinker:// paths', async () => {
    const model = await client.createModel({ baseModel: 'tiny', loraRank: 1, seed: 3 });
    const local = trainer.getModel(model.id)!;
    const batch = ['hello world', 'anneal rl', 'grpo'].map(sftDatum);
    const viaHttp = await model.forwardBackward(batch, 'cross_entropy');
    const direct = await local.forward(batch, 'cross_entropy');
    expect(viaHttp.logprobs.map((l) => Array.from(l))).toEqual(
      direct.logprobs.map((l) => Array.from(l)),
    );
    expect(viaHttp.metrics['loss:sum']).toBeGreaterThan(0);
    const step = await model.optimStep({ ...adam, gradClipNorm: 0.5 });
    expect(step.gradNorm).toBeGreaterThan(0);
    expect(step.metrics['grad_clip_scale:last']).toBeLessThanOrEqual(1);

    const saved = await model.saveWeights('ckpt-1');
    expect(saved).toBe(`tinker://${model.id}/weights/ckpt-1`);
    const restored = await client.createModel({ baseModel: 'tiny', loraRank: 1, seed: 9 });
    await restored.loadWeights(saved, { optimizer: true });
    const again = await restored.forward(batch, 'cross_entropy');
    expect(again.logprobs.map((l) => Array.from(l))).toEqual(
      (await model.forward(batch, 'cross_entropy')).logprobs.map((l) => Array.from(l)),
    );

    const weights = await model.saveWeightsForSampler('sampler-1');
    expect(weights.path).toBe(`tinker://${model.id}/sampler-1`);
    const sampler = new EmbeddedInferenceEngine({
      threads: 1,
      resolvePath: tinkerPathResolver(trainer.artifactDir),
    });
    try {
      await sampler.loadWeights(weights);
      const out = await sampler.sample({
        prompt: batch[0]!.modelInput,
        n: 2,
        maxTokens: 5,
        temperature: 1,
        topP: 1,
        seed: 1,
      });
      expect(out).toHaveLength(2);
      expect(out[0]!.logprobs.every((l) => Number.isFinite(l) && l <= 0)).toBe(true);
    } finally {
      await sampler.close();
    }
  });

  it('deletes checkpoints from disk through the delete route, as SkyRL answers it', async () => {
    const model = await client.createModel({ baseModel: 'tiny', loraRank: 1, seed: 4 });
    const saved = await model.saveWeights('ckpt-del');
    const exported = await model.saveWeightsForSampler('sampler-del');
    const resolve = tinkerPathResolver(trainer.artifactDir);
    expect(existsSync(resolve(saved))).toBe(true);
    expect(await model.deleteWeights(saved)).toBe(true);
    expect(existsSync(resolve(saved))).toBe(false);
    expect(await model.deleteWeights(saved)).toBe(false); // already gone: 404
    await expect(
      (await client.createModel({ baseModel: 'tiny', loraRank: 1 })).loadWeights(saved, {
        optimizer: true,
      }),
    ).rejects.toThrow();
    expect(await model.deleteSamplerWeights(exported.path)).toBe(true);
    expect(existsSync(resolve(exported.path))).toBe(false);
    const remove = (route: string, apiKey = 'k') =>
      fetch(`${baseUrl}/api/v1/${route}`, { method: 'DELETE', headers: { 'x-api-key': apiKey } });
    // skyrl/tinker/api.py delete_checkpoint: a bare id is a 400; the API key is required.
    expect((await remove(`training_runs/${model.id}/checkpoints/ckpt-del`)).status).toBe(400);
    expect((await remove(`training_runs/${model.id}/checkpoints/weights/x`, 'bad')).status).toBe(
      401,
    );
  });

  it('serves value-head models with the bradley_terry loss (scores on the wire)', async () => {
    const model = await client.createModel({ baseModel: 'tiny', loraRank: 1, head: 'value' });
    const a = Array.from(Buffer.from('q: 2+2? a: 4'));
    const b = Array.from(Buffer.from('q: 2+2? a: 5'));
    const pairs: Datum[] = [
      { modelInput: a, lossFnInputs: { label: new Float32Array(a.length).fill(1) } },
      { modelInput: b, lossFnInputs: {} },
    ];
    const result = await model.forwardBackward(pairs, 'bradley_terry');
    expect(result.logprobs.map((s) => s.length)).toEqual([1, 1]);
    expect(result.metrics['pair_accuracy:mean']).toBeGreaterThanOrEqual(0);
    expect((await model.optimStep(adam)).gradNorm).toBeGreaterThan(0);
  });

  it('answers 408 while a future is pending, then the result', async () => {
    const model = await client.createModel({ baseModel: 'tiny', loraRank: 1 });
    const text = 'a training sequence of bytes, for timing purposes only!';
    const datum = {
      model_input: { chunks: [{ type: 'encoded_text', tokens: Array.from(Buffer.from(text)) }] },
      loss_fn_inputs: {},
    };
    const data = Array.from({ length: 64 }, () => ({
      ...datum,
      loss_fn_inputs: {
        target_tokens: { data: Array.from(Buffer.from(text)), dtype: 'int64' },
        weights: { data: new Array<number>(text.length).fill(1), dtype: 'float32' },
      },
    }));
    const future = await post('forward', {
      model_id: model.id,
      forward_input: { data, loss_fn: 'cross_entropy' },
    });
    expect(future.json['status']).toBe('pending');
    const requestId = future.json['request_id'];
    const first = await post('retrieve_future', { request_id: requestId });
    expect(first.status).toBe(408);
    expect(typeof first.json['detail']).toBe('string');
    const deadline = Date.now() + 20_000;
    let last = first;
    while (last.status === 408 && Date.now() < deadline)
      last = await post('retrieve_future', { request_id: requestId });
    expect(last.status).toBe(200);
    expect((last.json['loss_fn_outputs'] as unknown[]).length).toBe(64);
    expect((await post('retrieve_future', { request_id: 'r-unknown' })).status).toBe(404);
  });

  it('is idempotent per (model_id, seq_id) and answers 409 to a reused seq_id', async () => {
    const model = await client.createModel({ baseModel: 'tiny', loraRank: 1 });
    const body = { model_id: model.id, seq_id: 7, adam_params: { learning_rate: 1e-4 } };
    const first = await post('optim_step', body);
    const retry = await post('optim_step', body);
    expect(retry.json['request_id']).toBe(first.json['request_id']);
    const conflict = await post('optim_step', { ...body, adam_params: { learning_rate: 1 } });
    expect(conflict.status).toBe(409);
    expect(String(conflict.json['detail'])).toMatch(/seq_id 7/);
  });

  it('rejects bad requests with the wire error shapes', async () => {
    const model = await client.createModel({ baseModel: 'tiny', loraRank: 1 });
    const missing = await post('forward_backward', {
      model_id: model.id,
      forward_backward_input: { data: [] },
    });
    expect(missing.status).toBe(422);
    expect(missing.json['detail']).toEqual([
      expect.objectContaining({ loc: ['body', 'forward_backward_input', 'loss_fn'] }),
    ]);
    const misaligned = await post('forward', {
      model_id: model.id,
      forward_input: {
        loss_fn: 'cross_entropy',
        data: [
          {
            model_input: { chunks: [{ type: 'encoded_text', tokens: [1, 2] }] },
            loss_fn_inputs: { weights: { data: [1], dtype: 'float32' } },
          },
        ],
      },
    });
    expect(misaligned.status).toBe(422);
    expect(JSON.stringify(misaligned.json['detail'])).toContain('expected 2 values');
    expect((await post('get_info', { model_id: 'm-nope' })).status).toBe(404);
    expect((await post('get_info', { model_id: model.id }, 'wrong')).status).toBe(401);
    expect((await post('session_heartbeat', { session_id: 's-nope' })).status).toBe(404);
    expect((await post('save_weights', { model_id: model.id, path: '../x' })).status).toBe(422);
    const health = await fetch(`${baseUrl}/api/v1/healthz`);
    expect(await health.json()).toEqual({ status: 'ok' });
    // a failed operation is a 400 from retrieve_future, surfaced by the client
    await expect(model.forward([sftDatum('x'.repeat(80))], 'cross_entropy')).rejects.toThrow(
      /blockSize/,
    );
  });

  it('releases the models of a session that stops sending heartbeats', async () => {
    const shortTrainer = new EmbeddedTrainer({
      artifactDir: dir,
      threads: 1,
      baseModels: { tiny },
    });
    const shortServer = new EmbeddedTrainerServer(shortTrainer, { sessionTimeoutMs: 500 });
    const url = await shortServer.listen();
    try {
      await shortTrainer.createModel({ baseModel: 'tiny', loraRank: 1 }); // compute thread started
      const call = async (route: string, body: unknown) =>
        (await fetch(`${url}/api/v1/${route}`, { method: 'POST', body: JSON.stringify(body) }))
          .status;
      const session = (await (
        await fetch(`${url}/api/v1/create_session`, {
          method: 'POST',
          body: '{"tags":[],"sdk_version":"0.24.1"}',
        })
      ).json()) as { session_id: string };
      const created = await fetch(`${url}/api/v1/create_model`, {
        method: 'POST',
        body: JSON.stringify({
          session_id: session.session_id,
          base_model: 'tiny',
          lora_config: { rank: 1 },
          model_role: 'policy',
        }),
      });
      const { model_id: modelId } = (await created.json()) as { model_id: string };
      expect(await call('get_info', { model_id: modelId })).toBe(200);
      const deadline = Date.now() + 5_000;
      while ((await call('get_info', { model_id: modelId })) === 200 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(await call('get_info', { model_id: modelId })).toBe(404);
      expect(shortTrainer.getModel(modelId)).toBeUndefined();
    } finally {
      await shortServer.close();
      await shortTrainer.close();
    }
  });
});

describe('unload_model', () => {
  it('frees a model on the trainer (TinkerTrainerModel.release); it is unknown afterwards', async () => {
    const model = await client.createModel({ baseModel: 'tiny', loraRank: 1 });
    await model.forwardBackward([sftDatum('unload me')], 'cross_entropy');
    expect(trainer.modelIds()).toContain(model.id);
    await model.release();
    expect(trainer.modelIds()).not.toContain(model.id);
    const after = await post('forward', {
      model_id: model.id,
      forward_input: { data: [], loss_fn: 'cross_entropy' },
    });
    expect(after.status).toBe(404);
    // A backend without the route answers 404: release() resolves (the session keeps the model).
    await model.release();
  });
});
