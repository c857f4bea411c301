// Weight sync against vLLM's LoRA cache (docs/engines.md "Conformance", vLLM rows). The fake
// (test/vllm/lora-cache.ts, lora-routes.ts) holds what vLLM holds:
// - vllm/config/lora.py@01230b40 `LoRAConfig`: max_cpu_loras defaults to max_loras;
// - vllm/lora/model_manager.py@01533aa8 (registered LRU of max_cpu_loras, active LRU of
//   max_loras slots) and vllm/lora/worker_manager.py@0030b9ff `LRUCacheWorkerLoRAManager.add_adapter`
//   (an evicted adapter is read again from its lora_path when next loaded or used);
// - vllm/entrypoints/openai/models/serving.py@00153c8b `unload_lora_adapter` (main: 500 "Failed
//   to remove lora adapter … from the engine." for an evicted adapter, the name stays listed) and
//   vllm/entrypoints/openai/serving_models.py@075e9ba8 (v0.11 line: unload only drops the name).
import { access, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fakeTimers } from '../../test/fake-timers.ts';
import type { SampleRequest } from '../types.ts';
import { VllmInferenceEngine } from './client.ts';
import { adapterPathResolver } from './lora-paths.ts';
import type { VllmEvent } from './transport.ts';
import { FakeVllmServer } from '../../test/vllm/fake-server.ts';
import type { FakeVllmOptions } from '../../test/vllm/fake-server.ts';

const open: Array<{ close(): Promise<void> }> = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

async function setup(replicas: number, server: FakeVllmOptions, root?: string) {
  const fakes = await Promise.all(
    Array.from({ length: replicas }, () => FakeVllmServer.start(server)),
  );
  const events: VllmEvent[] = [];
  const engine = new VllmInferenceEngine(
    {
      name: 'vllm-cache',
      replicas: fakes.map((f) => f.url),
      model: 'base-model',
      healthCheckIntervalMs: 0,
      retry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 1 },
      ...(root !== undefined && { resolveLoraPath: adapterPathResolver({ root }) }),
    },
    { timers: fakeTimers().timers, adapterInstance: 'w1', onEvent: (e) => events.push(e) },
  );
  open.push(engine, ...fakes);
  return { fakes, engine, events };
}

const request = (model: string): SampleRequest => ({
  prompt: [1, 2],
  n: 1,
  maxTokens: 2,
  temperature: 1,
  topP: 1,
  model,
});
const listed = (fake: FakeVllmServer) => [...fake.adapters.keys()].sort();
const retries = (events: VllmEvent[]) => events.filter((e) => e.type === 'request:retry');
const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

/** One lag-0 GRPO step as the issue replays it: the policy's rollouts, then the reference's
 * (which finish last, so the superseded policy version is the least recently used), then the
 * next policy version. */
async function step(engine: VllmInferenceEngine, k: number, path = `/shared/step-${k}`) {
  await engine.sample(request('policy'));
  await engine.sample(request('reference'));
  await engine.loadWeights({ name: 'policy', path });
}

describe("the vLLM fake's LoRA cache", () => {
  it('main: loading a third adapter into --max-loras 2 evicts the LRU one; unloading it is a 500 and the name stays', async () => {
    const fake = await FakeVllmServer.start({ generation: 'current', maxLoras: 2 });
    open.push(fake);
    const load = (name: string) =>
      fetch(`${fake.url}/v1/load_lora_adapter`, {
        method: 'POST',
        body: JSON.stringify({ lora_name: name, lora_path: `/p/${name}` }),
      });
    for (const name of ['a', 'b', 'c']) expect((await load(name)).status).toBe(200);
    expect(fake.lora.cache?.held()).toEqual([2, 3]); // a (id 1) evicted
    const unload = await fetch(`${fake.url}/v1/unload_lora_adapter`, {
      method: 'POST',
      body: JSON.stringify({ lora_name: 'a' }),
    });
    expect(unload.status).toBe(500);
    expect(await unload.text()).toContain("Failed to remove lora adapter 'a' from the engine.");
    expect(listed(fake)).toEqual(['a', 'b', 'c']);
    // A request for the evicted adapter reads it again from its path (and evicts b).
    const completion = await fetch(`${fake.url}/v1/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'a', prompt: [1], max_tokens: 1 }),
    });
    expect(completion.status).toBe(200);
    expect(fake.lora.cache?.reads.map((r) => r.path)).toEqual(['/p/a', '/p/b', '/p/c', '/p/a']);
    expect(fake.lora.cache?.held()).toEqual([3, 1]);
  });

  it('v0.11: unloading an evicted adapter drops the name', async () => {
    const fake = await FakeVllmServer.start({ generation: 'v0.11', maxLoras: 1 });
    open.push(fake);
    for (const name of ['a', 'b']) {
      await fetch(`${fake.url}/v1/load_lora_adapter`, {
        method: 'POST',
        body: JSON.stringify({ lora_name: name, lora_path: `/p/${name}` }),
      });
    }
    const unload = await fetch(`${fake.url}/v1/unload_lora_adapter`, {
      method: 'POST',
      body: JSON.stringify({ lora_name: 'a' }),
    });
    expect(unload.status).toBe(200);
    expect(listed(fake)).toEqual(['b']);
  });

  it('runs at most --max-loras distinct adapters in one batch; the others wait for a slot', async () => {
    const { fakes, engine } = await setup(1, {
      generation: 'current',
      maxLoras: 2,
      maxCpuLoras: 4,
    });
    const fake = fakes[0] as FakeVllmServer;
    for (const name of ['a', 'b', 'c']) await engine.loadWeights({ name, path: `/p/${name}` });
    const gate = fake.holdCompletions();
    const runs = ['a', 'b', 'c'].map((name) => engine.sample(request(name)));
    await vi.waitFor(() => expect(gate.waiting()).toBe(2)); // c waits for a slot
    gate.release();
    await Promise.all(runs);
    expect(fake.completedModels).toHaveLength(3);
    expect(fake.lora.cache?.peakRunning).toBe(2);
  });
});

describe('weight sync against the LoRA cache', () => {
  for (const generation of ['current', 'v0.11'] as const) {
    it(`${generation}: a lag-0 run with --max-loras 2 leaks no adapter name and never retries a sync`, async () => {
      const { fakes, engine, events } = await setup(2, { generation, maxLoras: 2 });
      await engine.loadWeights({ name: 'reference', path: '/shared/ref' });
      await engine.loadWeights({ name: 'policy', path: '/shared/step-0' });
      for (let k = 1; k <= 5; k += 1) await step(engine, k);
      for (const fake of fakes) {
        expect(listed(fake)).toEqual(['policy@w1.6', 'reference@w1.1']);
        // The superseded version was evicted before its unload on main: the run relied on it.
        if (generation === 'current') expect(fake.lora.cache?.evicted.length).toBeGreaterThan(0);
      }
      expect(retries(events)).toEqual([]);
      await engine.sample(request('reference')); // re-read from its path if it was evicted
      await engine.sample(request('policy'));
    });
  }

  it('main: a transient /health failure re-admits the replica with every current name served', async () => {
    const { fakes, engine, events } = await setup(1, { generation: 'current', maxLoras: 2 });
    const fake = fakes[0] as FakeVllmServer;
    await engine.loadWeights({ name: 'reference', path: '/shared/ref' });
    await engine.loadWeights({ name: 'policy', path: '/shared/step-0' });
    await step(engine, 1);
    fake.healthStatus = 503;
    await engine.checkHealth();
    expect(engine.stats().replicas.map((r) => r.healthy)).toEqual([false]);
    fake.healthStatus = 200;
    const before = fake.requests.length;
    await engine.checkHealth();
    expect(engine.stats().replicas.map((r) => r.healthy)).toEqual([true]);
    // Listed with the right paths: loaded; nothing unloaded and loaded again.
    expect(fake.requests.slice(before).map((r) => r.path)).toEqual(['/health', '/v1/models']);
    expect(events.filter((e) => e.type === 'adapter:dropped')).toEqual([]);
    expect(listed(fake)).toEqual(['policy@w1.2', 'reference@w1.1']);
    await step(engine, 2);
    expect(fake.completedModels.slice(-2)).toEqual(['policy@w1.2', 'reference@w1.1']);
    expect(listed(fake)).toEqual(['policy@w1.3', 'reference@w1.1']);
    expect(retries(events)).toEqual([]);
  });

  it('main: a version released while its replica was out is unloaded on return, even once evicted', async () => {
    const { fakes, engine, events } = await setup(2, { generation: 'current', maxLoras: 2 });
    const [a] = fakes as [FakeVllmServer, FakeVllmServer];
    await engine.loadWeights({ name: 'reference', path: '/shared/ref' });
    await engine.loadWeights({ name: 'policy', path: '/shared/step-0' });
    a.healthStatus = 503;
    await engine.checkHealth(); // a out, still holding policy@w1.1
    await step(engine, 1); // policy@w1.1 released on b, pending on a
    // a evicts policy@w1.1 meanwhile (another run's adapters on the same server).
    for (const name of ['other-1', 'other-2']) {
      await fetch(`${a.url}/v1/load_lora_adapter`, {
        method: 'POST',
        body: JSON.stringify({ lora_name: name, lora_path: `/o/${name}` }),
      });
    }
    a.healthStatus = 200;
    await engine.checkHealth();
    expect(engine.stats().replicas.map((r) => r.healthy)).toEqual([true, true]);
    expect(listed(a)).toEqual(['other-1', 'other-2', 'policy@w1.2', 'reference@w1.1']);
    expect(retries(events)).toEqual([]);
  });

  it('a stale name the replica refuses to remove never keeps it out of rotation', async () => {
    const { fakes, engine } = await setup(2, { generation: 'v0.11' });
    const [a] = fakes as [FakeVllmServer, FakeVllmServer];
    await engine.loadWeights({ name: 'policy', path: '/shared/step-0' });
    a.healthStatus = 503;
    await engine.checkHealth();
    await engine.loadWeights({ name: 'policy', path: '/shared/step-1' });
    a.healthStatus = 200;
    const refusal = { kind: 'reply' as const, status: 500, body: { error: { message: 'boom' } } };
    a.enqueue('/v1/unload_lora_adapter', refusal, refusal, refusal);
    await engine.checkHealth();
    expect(engine.stats().replicas.map((r) => r.healthy)).toEqual([true, true]);
    expect(a.adapters.get('policy@w1.2')).toBe('/shared/step-1');
    // Pending: removed at the next re-admission.
    a.healthStatus = 503;
    await engine.checkHealth();
    a.healthStatus = 200;
    await engine.checkHealth();
    expect(listed(a)).toEqual(['policy@w1.2']);
  });
});

describe('adapter files on shared storage', () => {
  async function skyrlArchive(root: string, name: string): Promise<string> {
    const staging = join(root, 'staging', name);
    await mkdir(staging, { recursive: true });
    await writeFile(join(staging, 'adapter_config.json'), JSON.stringify({ r: 8 }));
    await writeFile(join(staging, 'adapter_model.safetensors'), Buffer.alloc(64));
    const { create } = await import('tar');
    const dir = join(root, 'model-1', 'sampler_weights');
    await mkdir(dir, { recursive: true });
    const archive = join(dir, `${name}.tar.gz`);
    await create({ gzip: true, file: archive, cwd: staging }, ['.']);
    return archive;
  }

  it("removes a version's unpacked directory once every replica unloaded it, never the trainer's archive", async () => {
    const root = await mkdtemp(join(tmpdir(), 'anneal-lora-files-'));
    dirs.push(root);
    const { fakes, engine } = await setup(2, { generation: 'current', maxLoras: 2 }, root);
    const [a] = fakes as [FakeVllmServer, FakeVllmServer];
    const weights = join(root, 'model-1', 'sampler_weights');
    for (const name of ['ref', 's0', 's1', 's2']) await skyrlArchive(root, name);
    await engine.loadWeights({ name: 'reference', path: 'tinker://model-1/ref' });
    await engine.loadWeights({ name: 'policy', path: 'tinker://model-1/s0' });
    await step(engine, 1, 'tinker://model-1/s1');
    expect(await exists(join(weights, 's0'))).toBe(false);
    expect(await exists(join(weights, 's0.tar.gz'))).toBe(true); // SkyRL's retention decides
    expect(await exists(join(weights, 's1'))).toBe(true);
    // A replica out of rotation may still list s1 (and re-read it): its files stay until then.
    a.healthStatus = 503;
    await engine.checkHealth();
    await step(engine, 2, 'tinker://model-1/s2');
    expect(await exists(join(weights, 's1'))).toBe(true);
    a.healthStatus = 200;
    await engine.checkHealth();
    expect(await exists(join(weights, 's1'))).toBe(false);
    await engine.releaseWeights('policy');
    await engine.releaseWeights('reference');
    for (const name of ['ref', 's0', 's1', 's2']) {
      expect(await exists(join(weights, name))).toBe(false);
      expect(await exists(join(weights, `${name}.tar.gz`))).toBe(true);
    }
    for (const fake of fakes) expect(listed(fake)).toEqual([]);
  });

  it('removes a download of this worker (hosted Tinker) with its directory', async () => {
    const root = await mkdtemp(join(tmpdir(), 'anneal-lora-files-'));
    dirs.push(root);
    const { engine } = await setup(1, { generation: 'current', maxLoras: 2 });
    const first = await skyrlArchive(root, 'h1');
    const second = await skyrlArchive(root, 'h2');
    await engine.loadWeights({ name: 'policy', path: first, downloaded: true });
    await engine.loadWeights({ name: 'policy', path: second, downloaded: true });
    expect(await exists(first)).toBe(false);
    expect(await exists(first.replace(/\.tar\.gz$/, ''))).toBe(false);
    expect(await exists(second)).toBe(true);
    await engine.releaseWeights('policy');
    expect(await exists(second)).toBe(false);
    expect(await exists(second.replace(/\.tar\.gz$/, ''))).toBe(false);
  });
});
