// Shared adapters (a shared reference, docs/operations.md "Shared references"; weight-sync.ts):
// loaded under their own name by every engine that serves them (one per worker process), held
// once by the server, forgotten by an engine without unloading them, and unloaded by the last
// user's release even from an engine that never loaded them. The fake's load/unload routes
// answer as vLLM does (test/vllm/lora-routes.ts: a second load of a name is refused 400 "has
// already been loaded", vllm/entrypoints/openai/models/serving.py@00153c8b).
import { afterEach, describe, expect, it } from 'vitest';
import { EngineError } from '../http/errors.ts';
import { fakeTimers } from '../../test/fake-timers.ts';
import { type FakeVllmOptions, FakeVllmServer } from '../../test/vllm/fake-server.ts';
import { VllmInferenceEngine } from './client.ts';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
});

const NAME = 'ref-0123456789abcdef@shared.1';

async function setup(options: FakeVllmOptions = {}) {
  const fake = await FakeVllmServer.start({ maxLoras: 8, ...options });
  open.push(fake);
  const engineFor = (instance: string) => {
    const engine = new VllmInferenceEngine(
      {
        name: 'shared',
        replicas: [fake.url],
        model: 'base-model',
        healthCheckIntervalMs: 0,
        retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 1 },
      },
      { timers: fakeTimers().timers, adapterInstance: instance },
    );
    open.push(engine);
    return engine;
  };
  return { fake, w1: engineFor('w1'), w2: engineFor('w2'), w3: engineFor('w3') };
}

const sample = (engine: VllmInferenceEngine) =>
  engine.sample({ prompt: [1, 2, 3], n: 1, maxTokens: 2, temperature: 1, topP: 1, model: NAME });

const loadsOf = (fake: FakeVllmServer) =>
  fake.requestsTo('/v1/load_lora_adapter').map((q) => [q.status, q.body]);

describe('shared vLLM adapters', () => {
  it('is loaded under its own name, once however many engines serve it', async () => {
    const { fake, w1, w2 } = await setup();
    const weights = { name: NAME, path: '/shared/ref', shared: true };
    await w1.loadWeights(weights);
    await w1.loadWeights(weights); // a second run of the same process: nothing to do
    await w2.loadWeights(weights); // another process: vLLM holds it already, from this path
    expect(loadsOf(fake)).toEqual([
      [200, { lora_name: NAME, lora_path: '/shared/ref' }],
      [400, { lora_name: NAME, lora_path: '/shared/ref' }],
    ]);
    expect([...fake.adapters.keys()]).toEqual([NAME]);
    await Promise.all([sample(w1), sample(w2)]);
    expect(fake.served).toMatchObject([
      { requested: NAME, servedBy: NAME },
      { requested: NAME, servedBy: NAME },
    ]);
  });

  it('two engines loading it at the same moment: one load succeeds, the other is told it is loaded', async () => {
    // vLLM checks and adds a name under its per-name lock (lora-routes.ts), so concurrent loads
    // from two workers are one 200 and one 400, never two loads of one name.
    const { fake, w1, w2 } = await setup();
    const weights = { name: NAME, path: '/shared/ref', shared: true };
    await Promise.all([w1.loadWeights(weights), w2.loadWeights(weights)]);
    expect(
      loadsOf(fake)
        .map(([status]) => status)
        .sort(),
    ).toEqual([200, 400]);
    expect([...fake.adapters.keys()]).toEqual([NAME]);
    await Promise.all([sample(w1), sample(w2)]);
    expect(fake.served.every((s) => s.servedBy === NAME)).toBe(true);
  });

  it('an engine that forgets it leaves it loaded for the others; the last release unloads it', async () => {
    const { fake, w1, w2, w3 } = await setup();
    await w1.loadWeights({ name: NAME, path: '/shared/ref', shared: true });
    await w2.loadWeights({ name: NAME, path: '/shared/ref', shared: true });
    await w1.releaseWeights(NAME, { keepLoaded: true });
    expect(w1.adapterState()).toEqual([]);
    expect(fake.requestsTo('/v1/unload_lora_adapter')).toEqual([]);
    await sample(w2);
    // Without `shared` an unknown name is no business of this engine; with it, it is unloaded
    // wherever a replica lists it (its last user's worker may be gone).
    await w3.releaseWeights(NAME);
    expect([...fake.adapters.keys()]).toEqual([NAME]);
    await w3.releaseWeights(NAME, { shared: true });
    expect(fake.requestsTo('/v1/unload_lora_adapter').map((q) => [q.status, q.body])).toEqual([
      [200, { lora_name: NAME }],
    ]);
    expect([...fake.adapters.keys()]).toEqual([]);
    await w3.releaseWeights(NAME, { shared: true }); // already gone: nothing to send
    expect(fake.requestsTo('/v1/unload_lora_adapter')).toHaveLength(1);
  });

  it("fails a request the server serves with another tenant's shared reference", async () => {
    const other = 'ref-fedcba9876543210@shared.1';
    const { fake, w1 } = await setup({
      crossServe: (requested) => (requested === NAME ? other : undefined),
    });
    await w1.loadWeights({ name: NAME, path: '/shared/ref', shared: true });
    await w1.loadWeights({ name: other, path: '/shared/other', shared: true });
    const error = await sample(w1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EngineError);
    expect((error as EngineError).code).toBe('ANNEAL_ERR_ENGINE_ADAPTER_MISMATCH');
    expect(fake.served).toMatchObject([{ requested: NAME, servedBy: other }]); // not retried
  });
});
