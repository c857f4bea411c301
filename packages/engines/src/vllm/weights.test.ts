// Weight sync (LoRA hot-reload + prefix-cache reset) and the tokenizer routes, over loopback.
import { afterEach, describe, expect, it } from 'vitest';
import { fakeTimers } from '../../test/fake-timers.ts';
import { VllmInferenceEngine } from './client.ts';
import type { VllmEndpointConfig } from './config.ts';
import { FakeVllmServer } from './testing/fake-server.ts';
import type { FakeVllmOptions } from './testing/fake-server.ts';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
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
    { timers: fakeTimers().timers },
  );
  open.push(engine, ...fakes);
  return { fakes, engine };
}

const weights = { name: 'policy', path: '/shared/adapters/step-1' };

describe('vLLM weight sync', () => {
  it('loads the adapter in place on every replica, then resets each prefix cache', async () => {
    const { fakes, engine } = await setup(2);
    await engine.loadWeights(weights);
    await engine.loadWeights({ name: 'policy', path: '/shared/adapters/step-2' });
    for (const fake of fakes) {
      const paths = fake.requests.map((r) => r.path);
      expect(paths).toEqual([
        '/v1/load_lora_adapter',
        '/reset_prefix_cache',
        '/v1/load_lora_adapter',
        '/reset_prefix_cache',
      ]);
      expect(fake.requests[2]?.body).toEqual({
        lora_name: 'policy',
        lora_path: '/shared/adapters/step-2',
        load_inplace: true,
      });
      expect(fake.adapters.get('policy')).toBe('/shared/adapters/step-2');
      expect(fake.prefixCacheResets).toBe(2);
    }
    const [seq] = await engine.sample({
      prompt: [1],
      n: 1,
      maxTokens: 2,
      temperature: 1,
      topP: 1,
      model: 'policy',
    });
    expect(seq?.tokens).toHaveLength(2);
  });

  it('drops a replica that is down during a sync and loads the adapter when it returns', async () => {
    const { fakes, engine } = await setup(2);
    const [a, b] = fakes as [FakeVllmServer, FakeVllmServer];
    await a.stop();
    await engine.loadWeights(weights);
    expect(b.adapters.get('policy')).toBe(weights.path);
    expect(engine.stats().replicas.map((r) => r.healthy)).toEqual([false, true]);
    await a.restart();
    await engine.checkHealth();
    expect(a.adapters.get('policy')).toBe(weights.path); // resynced before re-admission
    expect(a.prefixCacheResets).toBe(1);
    expect(engine.stats().replicas.map((r) => r.healthy)).toEqual([true, true]);
  });

  it('fails the sync on a 4xx (LoRA not enabled) with the server message', async () => {
    const { engine } = await setup(1, { loraEnabled: false });
    await expect(engine.loadWeights(weights)).rejects.toThrow(
      /\/v1\/load_lora_adapter\): HTTP 404: "Not Found"/,
    );
  });

  it('explains a missing dev-mode /reset_prefix_cache', async () => {
    const { engine } = await setup(1, { devMode: false });
    await expect(engine.loadWeights(weights)).rejects.toThrow('VLLM_SERVER_DEV_MODE=1');
  });

  it('fails when no replica accepts the weights', async () => {
    const { fakes, engine } = await setup(1);
    await fakes[0]?.stop();
    await expect(engine.loadWeights(weights)).rejects.toThrow(
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
      {
        resolveLoraPath: (w) => `/shared/${w.path.slice('tinker://'.length)}`,
      },
    );
    await mapped.engine.loadWeights(remote);
    expect(mapped.fakes[0]?.adapters.get('policy')).toBe('/shared/model-1/step-3');
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
