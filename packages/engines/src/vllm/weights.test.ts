// Weight sync against the fake vLLM of both generations: versioned adapter names, requests pinned
// to the version they started on, bad adapters vs dead replicas, archives and pre-flight checks.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fakeTimers } from '../../test/fake-timers.ts';
import { ENGINE_ERROR_CODES, EngineError } from '../http/errors.ts';
import type { SampleRequest } from '../types.ts';
import { VllmInferenceEngine } from './client.ts';
import type { VllmEndpointConfig } from './config.ts';
import { adapterPathResolver } from './lora-paths.ts';
import { FakeVllmServer } from '../../test/vllm/fake-server.ts';
import type { FakeVllmOptions } from '../../test/vllm/fake-server.ts';

const open: Array<{ close(): Promise<void> }> = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

async function setup(
  replicas: number,
  server: FakeVllmOptions = {},
  config: Partial<VllmEndpointConfig> = {},
): Promise<{ fakes: FakeVllmServer[]; engine: VllmInferenceEngine }> {
  const fakes = await Promise.all(
    Array.from({ length: replicas }, () => FakeVllmServer.start(server)),
  );
  const engine = new VllmInferenceEngine(
    {
      name: 'vllm-sync',
      replicas: fakes.map((f) => f.url),
      model: 'base-model',
      healthCheckIntervalMs: 0,
      retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 1 },
      ...config,
    },
    { timers: fakeTimers().timers, adapterInstance: 'w1' },
  );
  open.push(engine, ...fakes);
  return { fakes, engine };
}

async function scratch(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'anneal-vllm-weights-'));
  dirs.push(dir);
  return dir;
}

/** A PEFT adapter directory as SkyRL's JAX backend / hosted Tinker export it. */
async function adapterDir(parent: string, name: string, rank: number): Promise<string> {
  const dir = join(parent, name);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'adapter_config.json'), JSON.stringify({ r: rank, peft_type: 'LORA' }));
  await writeFile(join(dir, 'adapter_model.safetensors'), Buffer.alloc(64));
  return dir;
}

const request = (model: string): SampleRequest => ({
  prompt: [1, 2],
  n: 1,
  maxTokens: 2,
  temperature: 1,
  topP: 1,
  model,
});
const loads = (fake: FakeVllmServer) => fake.requestsTo('/v1/load_lora_adapter').map((q) => q.body);

describe('vLLM weight sync', () => {
  for (const generation of ['v0.11', 'current'] as const) {
    it(`${generation}: serves each version under its own name, routes to the newest, unloads the old`, async () => {
      const { fakes, engine } = await setup(2, { generation });
      await engine.loadWeights({ name: 'policy', path: '/shared/step-1' });
      await engine.loadWeights({ name: 'policy', path: '/shared/step-2' });
      for (const fake of fakes) {
        expect(fake.requests.map((r) => r.path)).toEqual([
          '/v1/load_lora_adapter',
          '/v1/load_lora_adapter',
          '/v1/unload_lora_adapter',
        ]);
        expect(loads(fake)).toEqual([
          { lora_name: 'policy@w1.1', lora_path: '/shared/step-1' },
          { lora_name: 'policy@w1.2', lora_path: '/shared/step-2' },
        ]);
        expect([...fake.adapters]).toEqual([['policy@w1.2', '/shared/step-2']]);
      }
      await engine.sample(request('policy'));
      await engine.sample(request('policy'));
      expect(fakes.flatMap((f) => f.completedModels)).toEqual(['policy@w1.2', 'policy@w1.2']);
      expect(engine.adapterState()).toEqual([
        {
          name: 'policy',
          current: 'policy@w1.2',
          loaded: [
            {
              adapter: 'policy@w1.2',
              path: '/shared/step-2',
              replicas: fakes.map((f) => f.url),
              inFlight: 0,
            },
          ],
        },
      ]);
    });
  }

  it('a request started on version k finishes on k; k is unloaded once it drains', async () => {
    const { fakes, engine } = await setup(1, { generation: 'v0.11' });
    const fake = fakes[0] as FakeVllmServer;
    await engine.loadWeights({ name: 'policy', path: '/shared/step-1' });
    const gate = fake.holdCompletions();
    const early = engine.sample(request('policy'));
    await vi.waitFor(() => expect(gate.waiting()).toBe(1));
    await engine.loadWeights({ name: 'policy', path: '/shared/step-2' });
    // Not unloaded under the running request; new requests already go to step-2.
    expect([...fake.adapters.keys()]).toEqual(['policy@w1.1', 'policy@w1.2']);
    const late = engine.sample(request('policy'));
    await vi.waitFor(() => expect(gate.waiting()).toBe(2));
    gate.release();
    await Promise.all([early, late]);
    expect(fake.completedModels.sort()).toEqual(['policy@w1.1', 'policy@w1.2']);
    await vi.waitFor(() => expect([...fake.adapters.keys()]).toEqual(['policy@w1.2']));
    expect(fake.requestsTo('/v1/unload_lora_adapter').map((q) => q.body)).toEqual([
      { lora_name: 'policy@w1.1' },
    ]);
  });

  it('a name the replica already lists with this path is loaded (a load whose first reply was lost)', async () => {
    const { fakes, engine } = await setup(1, { generation: 'v0.11' });
    const fake = fakes[0] as FakeVllmServer;
    fake.adapters.set('policy@w1.1', '/shared/step-1'); // loaded, but the reply never came
    await engine.loadWeights({ name: 'policy', path: '/shared/step-1' });
    expect(fake.adapters.get('policy@w1.1')).toBe('/shared/step-1');
    expect(fake.requests.map((r) => r.path)).toEqual([
      '/v1/load_lora_adapter', // 400 "has already been loaded."
      '/v1/models', // listed with this path: loaded, no unload and reload
    ]);
    await engine.sample(request('policy'));
    expect(fake.completedModels).toEqual(['policy@w1.1']);
  });

  it('a name the replica lists with another path is unloaded and loaded again', async () => {
    const { fakes, engine } = await setup(1, { generation: 'v0.11' });
    const fake = fakes[0] as FakeVllmServer;
    fake.adapters.set('policy@w1.1', '/shared/other');
    await engine.loadWeights({ name: 'policy', path: '/shared/step-1' });
    expect(fake.adapters.get('policy@w1.1')).toBe('/shared/step-1');
    expect(fake.requests.map((r) => r.path)).toEqual([
      '/v1/load_lora_adapter',
      '/v1/models',
      '/v1/unload_lora_adapter',
      '/v1/load_lora_adapter',
    ]);
  });

  it('drops a replica that is down during a sync and loads the current version when it returns', async () => {
    const { fakes, engine } = await setup(2);
    const [a, b] = fakes as [FakeVllmServer, FakeVllmServer];
    await a.stop();
    await engine.loadWeights({ name: 'policy', path: '/shared/step-1' });
    expect(b.adapters.get('policy@w1.1')).toBe('/shared/step-1');
    expect(engine.stats().replicas.map((r) => r.healthy)).toEqual([false, true]);
    await a.restart();
    await engine.checkHealth();
    expect(a.adapters.get('policy@w1.1')).toBe('/shared/step-1'); // resynced before re-admission
    expect(engine.stats().replicas.map((r) => r.healthy)).toEqual([true, true]);
  });

  for (const [generation, status] of [
    ['v0.11', 400],
    ['current', 500],
  ] as const) {
    it(`${generation}: a rank above --max-lora-rank (HTTP ${status}) fails the sync, not the replica`, async () => {
      const dir = await adapterDir(await scratch(), 'step-1', 32);
      // The operator claims 64, the servers run the default 16: only the server can tell.
      const { fakes, engine } = await setup(2, { generation }, { maxLoraRank: 64 });
      const error = (await engine
        .loadWeights({ name: 'policy', path: dir })
        .catch((e: unknown) => e)) as EngineError;
      expect(error).toBeInstanceOf(EngineError);
      expect(error.code).toBe(ENGINE_ERROR_CODES.badAdapter);
      expect(error.retryable).toBe(false);
      expect(error.status).toBe(status);
      expect(error.message).toContain(`adapter 'policy' (vLLM name 'policy@w1.1', path ${dir})`);
      expect(error.message).toContain('LoRA rank 32 is greater than max_lora_rank 16.');
      expect(error.message).toContain('--max-lora-rank >= 32');
      expect(engine.stats().replicas.map((r) => r.healthy)).toEqual([true, true]);
      for (const fake of fakes) expect(loads(fake)).toHaveLength(1); // never retried
      expect(engine.adapterState()).toEqual([]);
    });
  }

  it('a missing adapter path (404) names adapter, path and message; the replica stays', async () => {
    const { engine } = await setup(1, { missingPaths: ['/gone'] });
    const error = (await engine
      .loadWeights({ name: 'policy', path: '/gone' })
      .catch((e: unknown) => e)) as EngineError;
    expect(error.code).toBe(ENGINE_ERROR_CODES.badAdapter);
    expect(error.message).toContain(
      'HTTP 404 NotFoundError: Loading lora policy@w1.1 failed: No adapter found for /gone',
    );
    expect(engine.stats().replicas[0]?.healthy).toBe(true);
  });

  it('a 500 from a replica whose /health fails is a dead replica, not a bad adapter', async () => {
    const { fakes, engine } = await setup(1);
    const fake = fakes[0] as FakeVllmServer;
    const dead = { error: { message: 'EngineCore died', type: 'InternalServerError', code: 500 } };
    fake.enqueue('/v1/load_lora_adapter', { kind: 'reply', status: 500, body: dead });
    fake.enqueue('/v1/load_lora_adapter', { kind: 'reply', status: 500, body: dead });
    fake.healthStatus = 503;
    const error = (await engine
      .loadWeights({ name: 'policy', path: '/shared/step-1' })
      .catch((e: unknown) => e)) as EngineError;
    expect(error.code).toBe(ENGINE_ERROR_CODES.noReplica);
    expect(error.message).toContain('EngineCore died');
    expect(error.message).toContain('/health answered 503');
    expect(engine.stats().replicas[0]?.healthy).toBe(false);
  });

  it('refuses an adapter above maxLoraRank and full weights before asking any replica', async () => {
    const root = await scratch();
    const { fakes, engine } = await setup(1);
    const high = await adapterDir(root, 'r32', 32);
    await expect(engine.loadWeights({ name: 'policy', path: high })).rejects.toThrow(
      "inference endpoint 'vllm-sync' loads LoRA adapters up to rank 16",
    );
    const full = join(root, 'merged');
    await mkdir(full);
    await writeFile(join(full, 'config.json'), '{}');
    const error = (await engine
      .loadWeights({ name: 'policy', path: full })
      .catch((e: unknown) => e)) as EngineError;
    expect(error.code).toBe(ENGINE_ERROR_CODES.badAdapter);
    expect(error.message).toContain('hot-loads LoRA adapters only');
    expect(fakes[0]?.requests).toEqual([]);
  });

  it("unpacks SkyRL's {name}.tar.gz and loads the directory", async () => {
    const root = await scratch();
    const staging = await adapterDir(root, 'src', 8);
    const { create } = await import('tar');
    await mkdir(join(root, 'model-1', 'sampler_weights'), { recursive: true });
    const archive = join(root, 'model-1', 'sampler_weights', 'step-3.tar.gz');
    await create({ gzip: true, file: archive, cwd: staging }, ['.']);
    const { fakes, engine } = await setup(
      1,
      {},
      { resolveLoraPath: adapterPathResolver({ root }) },
    );
    await engine.loadWeights({ name: 'policy', path: 'tinker://model-1/step-3' });
    const dir = join(root, 'model-1', 'sampler_weights', 'step-3');
    expect(fakes[0]?.adapters.get('policy@w1.1')).toBe(dir); // the fake read its adapter_config.json
  });

  it('fails on a 4xx (LoRA not enabled) with the server message and a hint', async () => {
    const { engine } = await setup(1, { runtimeLoraUpdating: false });
    await expect(engine.loadWeights({ name: 'policy', path: '/a' })).rejects.toThrow(
      /\/v1\/load_lora_adapter\): HTTP 404: "Not Found" \(runtime LoRA loading is off/,
    );
  });

  // Weight sync needs no dev-mode route. vLLM keys its prefix cache by adapter
  // name (vllm/v1/core/kv_cache_utils.py@001cabc1 _gen_lora_extra_hash_keys), and each version
  // has its own name; /reset_prefix_cache exists only under VLLM_SERVER_DEV_MODE
  // (vllm/entrypoints/openai/api_server.py@0001948b build_app).
  it('syncs against a server without dev mode and never calls a dev-mode route', async () => {
    const { fakes, engine } = await setup(1, { devMode: false });
    const fake = fakes[0] as FakeVllmServer;
    await engine.loadWeights({ name: 'policy', path: '/a' });
    await engine.loadWeights({ name: 'policy', path: '/b' });
    await expect(engine.sample(request('policy'))).resolves.toHaveLength(1);
    expect(fake.completedModels).toEqual(['policy@w1.2']);
    expect(fake.requestsTo('/reset_prefix_cache')).toEqual([]);
  });

  it('fails a load on a server with runtime LoRA updating but no --enable-lora', async () => {
    const { engine } = await setup(1, { enableLora: false });
    await expect(engine.loadWeights({ name: 'policy', path: '/a' })).rejects.toThrow(
      'LoRA is not enabled',
    );
  });

  it('fails when no replica accepts the weights', async () => {
    const { fakes, engine } = await setup(1);
    await fakes[0]?.stop();
    await expect(engine.loadWeights({ name: 'policy', path: '/a' })).rejects.toThrow(
      "no replica accepted weights 'policy'",
    );
  });

  it('needs resolveLoraPath for tinker:// sampler weights', async () => {
    const plain = await setup(1);
    const remote = { name: 'policy', path: 'tinker://model-1/step-3' };
    await expect(plain.engine.loadWeights(remote)).rejects.toThrow('configure resolveLoraPath');
    const mapped = await setup(
      1,
      {},
      { resolveLoraPath: (w) => `/shared/${w.path.slice('tinker://'.length)}` },
    );
    await mapped.engine.loadWeights(remote);
    expect(mapped.fakes[0]?.adapters.get('policy@w1.1')).toBe('/shared/model-1/step-3');
  });
});

describe('vLLM tokenizer routes', () => {
  it('round-trips text through /tokenize and /detokenize', async () => {
    const { fakes, engine } = await setup(1);
    const ids = await engine.tokenize('héllo');
    expect(ids).toEqual([...Buffer.from('héllo', 'utf8')]);
    expect(await engine.detokenize(ids)).toBe('héllo');
    expect(fakes[0]?.requests[0]?.body).toEqual({
      model: 'base-model',
      prompt: 'héllo',
      add_special_tokens: false,
    });
  });
});
