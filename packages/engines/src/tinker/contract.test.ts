// The Tinker client against both real server behaviours (fake-flavors.ts): the same run —
// train, export under unique names, sample the export in the service, delete the replaced
// export, download the archive and unpack it — must work on SkyRL and on hosted Tinker, with
// each server's own answers (paths, 409s, grad clipping, archive route).
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { adam, startTinker } from '../../test/tinker-harness.ts';
import type { EngineError } from '../http/errors.ts';
import type { Datum } from '../types.ts';
import { AdapterError } from '../adapters/errors.ts';
import { stateAdapterTargets } from '../adapters/peft-modules.ts';
import { prepareSamplerWeights } from '../adapters/prepare.ts';
import { fakeAdapterArchive } from '../../test/tinker/fake-archive.ts';
import { downloadSamplerArchive, fetchSamplerWeights } from './archive.ts';
import { TinkerSamplingEngine } from './sampling.ts';
import type { FakeFlavor } from '../../test/tinker/fake-server.ts';
import { fakeSampledLogprob, fakeSampledToken } from '../../test/tinker/fake-sampling.ts';

const open: Array<{ close(): Promise<void> }> = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

const datum: Datum = {
  modelInput: [1, 2, 3],
  lossFnInputs: {
    target_tokens: Int32Array.from([2, 3, 4]),
    weights: Float32Array.from([0, 1, 1]),
  },
};

async function setup(flavor: FakeFlavor) {
  const started = await startTinker(open, { flavor, pendingPolls: 1, archivePreparing: 1 });
  const sampler = await TinkerSamplingEngine.connect(
    { name: 'tinker-sampler', baseUrl: started.fake.url, baseModel: 'b', heartbeatIntervalMs: 0 },
    { timers: started.time.timers },
  );
  open.push(sampler);
  const dir = await mkdtemp(join(tmpdir(), 'anneal-archive-'));
  dirs.push(dir);
  return { ...started, sampler, dir };
}

const EXPECTED = {
  skyrl: {
    samplerPath: (id: string, n: string) => `tinker://${id}/${n}`,
    clip: undefined,
    gradNorm: 1,
  },
  tinker: {
    samplerPath: (id: string, n: string) => `tinker://${id}/sampler_weights/${n}`,
    clip: 1,
    gradNorm: null,
  },
} as const;

describe.each(['skyrl', 'tinker'] as const)('Tinker client contract against %s', (flavor) => {
  const expected = EXPECTED[flavor];

  it('trains; grad clipping and grad norm are what this server does', async () => {
    const { engine, fake } = await setup(flavor);
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    await model.forwardBackward([datum], 'cross_entropy');
    const step = await model.optimStep({ ...adam, gradClipNorm: 1 });
    expect(fake.requestsTo('optim_step')[0]).toHaveProperty('adam_params.grad_clip_norm', 1);
    expect(fake.models.get(model.id)?.lastClip).toBe(expected.clip);
    expect(step.gradNorm).toBe(expected.gradNorm);
  });

  it('exports under unique names; a reused name is a checkpoint conflict', async () => {
    const { engine } = await setup(flavor);
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    const first = await model.saveWeightsForSampler('run-sampler-1');
    expect(first.path).toBe(expected.samplerPath(model.id, 'run-sampler-1'));
    const again = (await model
      .saveWeightsForSampler('run-sampler-1')
      .catch((e: unknown) => e)) as EngineError;
    expect(again.code).toBe('ANNEAL_ERR_TRAINER_CHECKPOINT_EXISTS');
  });

  it('samples an export in the service, with its logprobs, one request per seeded sample', async () => {
    const { engine, sampler, fake } = await setup(flavor);
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    await model.forwardBackward([datum], 'cross_entropy');
    await model.optimStep(adam);
    const exported = await model.saveWeightsForSampler('run-sampler-1');
    await sampler.loadWeights({ name: 'policy', path: exported.path });
    expect(fake.requestsTo('create_sampling_session')[0]).toEqual({
      session_id: sampler.sessionId,
      sampling_session_seq_id: 0,
      model_path: exported.path,
    });
    const request = { prompt: [1, 2, 3], n: 2, maxTokens: 3, temperature: 1, topP: 1 };
    const seeded = await sampler.sample({ ...request, seed: 5, model: 'policy' });
    const weights = { steps: 1 };
    expect(seeded).toEqual(
      [0, 1].map((k) => ({
        tokens: [0, 1, 2].map((i) => fakeSampledToken([1, 2, 3], weights, 5 + k, 0, i)),
        logprobs: [0, 1, 2].map((i) => fakeSampledLogprob(i, weights)),
        finishReason: 'length',
      })),
    );
    const sent = fake.requestsTo('asample') as Array<Record<string, unknown>>;
    expect(sent.map((b) => [b['seq_id'], b['num_samples']])).toEqual([
      [0, 1],
      [1, 1],
    ]);
    expect(sent[0]).toMatchObject({
      prompt: { chunks: [{ type: 'encoded_text', tokens: [1, 2, 3] }] },
      sampling_params: { max_tokens: 3, temperature: 1, top_p: 1, seed: 5 },
      prompt_logprobs: false,
    });
    // Unseeded: one request for all n; a stop token ends a sample with finishReason 'stop'.
    const stop = fakeSampledToken([1, 2, 3], weights, 0, 0, 1);
    const [unseeded] = await sampler.sample({
      ...request,
      n: 1,
      model: 'policy',
      stopTokenIds: [stop],
    });
    expect(unseeded).toMatchObject({ finishReason: 'stop' });
    expect(unseeded?.tokens).toHaveLength(2);
    // The base model, when no weights are named.
    const base = await sampler.sample({ ...request, n: 1 });
    expect(base[0]?.tokens[0]).toBe(fakeSampledToken([1, 2, 3], { steps: 0 }, 0, 0, 0));
    await expect(sampler.sample({ ...request, model: 'nope' })).rejects.toThrow(
      "no weights are served under 'nope' (loaded: policy)",
    );
  });

  it('deletes a replaced export once the next one is served', async () => {
    const { engine, sampler } = await setup(flavor);
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    const first = await model.saveWeightsForSampler('run-sampler-1');
    const second = await model.saveWeightsForSampler('run-sampler-2');
    await sampler.loadWeights({ name: 'policy', path: second.path });
    expect(await model.deleteSamplerWeights(first.path)).toBe(true);
    expect(await model.deleteSamplerWeights(first.path)).toBe(false); // already gone
    await expect(sampler.loadWeights({ name: 'old', path: first.path })).rejects.toThrow(
      /HTTP 404: Checkpoint not found/,
    );
    await expect(
      sampler.sample({ prompt: [1], n: 1, maxTokens: 1, temperature: 1, topP: 1, model: 'policy' }),
    ).resolves.toHaveLength(1);
  });

  it('deletes a training checkpoint (retention); a deleted one cannot be loaded', async () => {
    const { engine } = await setup(flavor);
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    const saved = await model.saveWeights('run-step-000001');
    expect(await model.deleteWeights(saved)).toBe(true);
    expect(await model.deleteWeights(saved)).toBe(false); // already gone
    await expect(model.loadWeights(saved, { optimizer: false })).rejects.toThrow(/404|not found/i);
    await expect(model.deleteWeights('tinker://m/run-1')).rejects.toThrow(RangeError);
  });

  it('downloads the archive of an export and unpacks it into a LoRA adapter', async () => {
    const { engine, fake, dir, time } = await setup(flavor);
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    const exported = await model.saveWeightsForSampler('run-sampler-1');
    const endpoint = { name: 'tinker-test', baseUrl: fake.url };
    const archive = await downloadSamplerArchive(endpoint, exported.path, dir, {
      timers: time.timers,
    });
    expect(archive.path).toBe(join(dir, model.id, 'sampler_weights', 'run-sampler-1.tar.gz'));
    expect(await readFile(archive.path)).toEqual(fake.archiveBytes(model.id, 'run-sampler-1'));
    expect(archive.expires).toBe('Wed, 02 Dec 2026 10:00:00 GMT');
    const archiveCalls = fake.requests
      .filter((r) => r.route.endsWith('/archive'))
      .map((r) => r.route);
    expect(archiveCalls).toEqual(
      flavor === 'tinker'
        ? [
            `training_runs/${model.id}/checkpoints/sampler_weights/run-sampler-1/archive`, // 503
            `training_runs/${model.id}/checkpoints/sampler_weights/run-sampler-1/archive`, // 302
          ]
        : [
            `training_runs/${model.id}/checkpoints/sampler_weights/run-sampler-1/archive`, // 404
            `training_runs/${model.id}/checkpoints/run-sampler-1/archive`, // 302 -> /download
          ],
    );
    const prepared = await fetchSamplerWeights(endpoint, exported.path, join(dir, 'again'), {
      timers: time.timers,
      server: flavor,
    });
    expect(prepared).toMatchObject({ kind: 'lora', rank: 8, unpacked: true });
    // the adapter_config.json now states what the tensors adapt (peft-modules.ts)
    expect(prepared.modules?.targetModules).toEqual(['q_proj']);
  });
});

describe('hosted Tinker archives', () => {
  // tinker SDK cli/commands/checkpoint.py@d595dc2b: an archive without checkpoint_complete is
  // refused ("The adapter files may be incomplete.")
  it('requires checkpoint_complete from hosted Tinker, not from SkyRL (which never writes it)', async () => {
    const { fake, dir, time, engine } = await setup('skyrl');
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    const exported = await model.saveWeightsForSampler('s1');
    const endpoint = { name: 'tinker-test', baseUrl: fake.url };
    const asHosted = (await fetchSamplerWeights(endpoint, exported.path, join(dir, 'h'), {
      timers: time.timers,
      server: 'tinker',
    }).catch((e: unknown) => e)) as AdapterError;
    expect(asHosted).toBeInstanceOf(AdapterError);
    expect(asHosted.reason).toBe('incomplete');
    expect(asHosted.message).toContain("has no 'checkpoint_complete'");
    const asSkyrl = await fetchSamplerWeights(endpoint, exported.path, join(dir, 's'), {
      timers: time.timers,
      server: 'skyrl',
    });
    expect(asSkyrl.kind).toBe('lora');
  });

  it("refuses a hosted export holding Tinker's model.unembed_tokens (a model created without train_unembed: false)", async () => {
    // the hosted fake's archive of a model created with the SDK's default lora_config
    const dir = await mkdtemp(join(tmpdir(), 'anneal-unembed-'));
    dirs.push(dir);
    const archive = join(dir, 'raw.tar.gz');
    await writeFile(archive, fakeAdapterArchive('m-raw', 'raw', { rank: 8 }, { hosted: true }));
    const prepared = await prepareSamplerWeights(archive);
    expect(prepared.kind).toBe('lora');
    const error = (await stateAdapterTargets(prepared.dir).catch(
      (e: unknown) => e,
    )) as AdapterError;
    expect(error.reason).toBe('unservable-modules');
    expect(error.message).toContain('model.unembed_tokens');
    // what Anneal creates (train_unembed: false) is servable
    await writeFile(
      archive,
      fakeAdapterArchive('m-ok', 'ok', { rank: 8, train_unembed: false }, { hosted: true }),
    );
    await rm(prepared.dir, { recursive: true });
    const ok = await prepareSamplerWeights(archive);
    expect((await stateAdapterTargets(ok.dir)).targetModules).toEqual(['q_proj']);
  });
});

describe('archive download errors', () => {
  it('names the checkpoint when neither route form knows it', async () => {
    const { fake, dir, time, engine } = await setup('skyrl');
    const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
    const error = (await downloadSamplerArchive(
      { name: 'tinker-test', baseUrl: fake.url },
      `tinker://${model.id}/missing`,
      dir,
      { timers: time.timers },
    ).catch((e: unknown) => e)) as EngineError;
    expect(error.message).toMatch(
      new RegExp(
        `no archive for sampler checkpoint ${model.id}/missing \\(tried sampler_weights/missing and missing\\)`,
      ),
    );
    await expect(
      downloadSamplerArchive({ name: 't', baseUrl: fake.url }, 'tinker://m/weights/x', dir),
    ).rejects.toThrow('is not tinker://<model_id>/<name>');
  });
});
