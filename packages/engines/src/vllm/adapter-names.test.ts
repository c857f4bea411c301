// Adapter names never repeat across weight-sync instances. vLLM keys cached KV blocks by the LoRA
// adapter name (vllm/v1/core/kv_cache_utils.py@001cabc1 `_gen_lora_extra_hash_keys`) and does
// not evict them on unload, so a restarted worker (or a retried attempt, or a second engine in
// one process) that loaded other weights under a name an earlier engine used on the same server
// could be served KV computed with the old weights. The fake records every path loaded under
// each name (`loadHistory`) and each re-load of a name with another path (`staleCacheLoads`).
import { afterEach, describe, expect, it } from 'vitest';
import { fakeTimers } from '../../test/fake-timers.ts';
import { FakeVllmServer } from '../../test/vllm/fake-server.ts';
import type { VllmGeneration } from '../../test/vllm/fixtures.ts';
import { VllmInferenceEngine } from './client.ts';
import type { VllmDeps } from './client.ts';
import { parseVersionedAdapterName, versionedAdapterName } from './weight-sync.ts';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
});

function engineOn(fake: FakeVllmServer, deps: VllmDeps = {}): VllmInferenceEngine {
  const engine = new VllmInferenceEngine(
    {
      name: 'vllm-names',
      replicas: [fake.url],
      model: 'base-model',
      healthCheckIntervalMs: 0,
      retry: { attempts: 1, baseDelayMs: 1, maxDelayMs: 1 },
    },
    { timers: fakeTimers().timers, ...deps },
  );
  open.push(engine);
  return engine;
}

describe('vLLM adapter names across weight-sync instances', () => {
  for (const generation of ['v0.11', 'current'] as VllmGeneration[]) {
    it(`a restarted worker never loads other weights under a name used before (${generation})`, async () => {
      const fake = await FakeVllmServer.start({ generation });
      open.push(fake);
      // The first worker syncs two steps and dies without releasing anything.
      const first = engineOn(fake);
      await first.loadWeights({ name: 'policy', path: '/shared/a/step-1' });
      await first.loadWeights({ name: 'policy', path: '/shared/a/step-2' });
      // Its successor runs the same run again from its own checkpoints; a second engine in the
      // same process does the same.
      const second = engineOn(fake);
      await second.loadWeights({ name: 'policy', path: '/shared/b/step-1' });
      await second.loadWeights({ name: 'policy', path: '/shared/b/step-2' });
      const third = engineOn(fake);
      await third.loadWeights({ name: 'policy', path: '/shared/c/step-1' });

      expect(fake.staleCacheLoads).toEqual([]);
      for (const [name, paths] of fake.loadHistory) {
        expect({ name, paths: new Set(paths).size }).toEqual({ name, paths: 1 });
      }
      expect(fake.loadHistory.size).toBe(5);
      const instances = new Set([first, second, third].map((e) => e.adapterInstance));
      expect(instances.size).toBe(3);
      const [seq] = await second.sample({
        prompt: [1, 2],
        n: 1,
        maxTokens: 2,
        temperature: 1,
        topP: 1,
        model: 'policy',
      });
      expect(seq?.tokens).toHaveLength(2);
      expect(fake.completedModels).toEqual([
        versionedAdapterName('policy', second.adapterInstance, 2),
      ]);
    });
  }

  it('names carry the injected instance id; a bad id is refused with the field', async () => {
    const fake = await FakeVllmServer.start();
    open.push(fake);
    const engine = engineOn(fake, { adapterInstance: 'w1' });
    await engine.loadWeights({ name: 'run_x-policy', path: '/shared/step-1' });
    expect([...fake.adapters.keys()]).toEqual(['run_x-policy@w1.1']);
    expect(parseVersionedAdapterName('run_x-policy@w1.1')).toEqual({
      name: 'run_x-policy',
      instance: 'w1',
      version: 1,
    });
    expect(parseVersionedAdapterName('run_x-policy@1')).toBeUndefined();
    expect(() => engineOn(fake, { adapterInstance: 'a.b' })).toThrow(
      "adapter instance id 'a.b' must be 1-16 characters",
    );
    expect(() => engineOn(fake, { adapterInstance: 'x'.repeat(17) })).toThrow(RangeError);
  });

  it('default instance ids are 16 hex digits (64 random bits), different per engine', async () => {
    const fake = await FakeVllmServer.start();
    open.push(fake);
    const ids = Array.from({ length: 20 }, () => engineOn(fake).adapterInstance);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{16}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
