// Releasing adapters (POST /v1/unload_lora_adapter) and re-admitting replicas with only the
// live ones; an adapter whose path vanished is dropped instead of keeping a replica out.
import { afterEach, describe, expect, it } from 'vitest';
import { fakeTimers } from '../../test/fake-timers.ts';
import { VllmInferenceEngine } from './client.ts';
import { FakeVllmServer } from '../../test/vllm/fake-server.ts';
import type { VllmEvent } from './transport.ts';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
});

async function setup(replicas: number) {
  const fakes = await Promise.all(Array.from({ length: replicas }, () => FakeVllmServer.start()));
  const events: VllmEvent[] = [];
  const engine = new VllmInferenceEngine(
    {
      name: 'vllm-release',
      replicas: fakes.map((f) => f.url),
      model: 'base-model',
      healthCheckIntervalMs: 0,
      retry: { attempts: 1, baseDelayMs: 1, maxDelayMs: 1 },
    },
    { timers: fakeTimers().timers, onEvent: (e) => events.push(e), adapterInstance: 'w1' },
  );
  open.push(engine, ...fakes);
  return { fakes: fakes as [FakeVllmServer, FakeVllmServer], engine, events };
}

const healthy = (engine: VllmInferenceEngine) => engine.stats().replicas.map((r) => r.healthy);

describe('vLLM adapter release', () => {
  it('unloads the adapter from every replica; unknown names are fine', async () => {
    const { fakes, engine } = await setup(2);
    await engine.loadWeights({ name: 'run-policy', path: '/a/p' });
    await engine.loadWeights({ name: 'run-reference', path: '/a/r' });
    await engine.releaseWeights('run-policy');
    await engine.releaseWeights('never-loaded');
    for (const fake of fakes) {
      // Every version of the name; a name never loaded needs no request.
      expect(fake.requestsTo('/v1/unload_lora_adapter').map((q) => q.body)).toEqual([
        { lora_name: 'run-policy@w1.1' },
      ]);
      expect([...fake.adapters.keys()]).toEqual(['run-reference@w1.1']);
    }
    expect(engine.adapterState().map((a) => a.name)).toEqual(['run-reference']);
    expect(healthy(engine)).toEqual([true, true]);
  });

  it('a re-admitted replica gets only live adapters and unloads ones released while it was out', async () => {
    const { fakes, engine } = await setup(2);
    const [a, b] = fakes;
    await engine.loadWeights({ name: 'old', path: '/a/old' });
    await a.stop();
    await engine.loadWeights({ name: 'live', path: '/a/live' }); // drops a
    await engine.releaseWeights('old');
    expect(b.adapters.has('old@w1.1')).toBe(false);
    await a.restart(); // same process state: it still holds 'old@w1.1'
    expect(a.adapters.has('old@w1.1')).toBe(true);
    await engine.checkHealth();
    expect(healthy(engine)).toEqual([true, true]);
    expect(
      a.requestsTo('/v1/load_lora_adapter').map((q) => (q.body as { lora_name: string }).lora_name),
    ).toEqual(['old@w1.1', 'live@w1.1']);
    expect(a.requestsTo('/v1/unload_lora_adapter').map((q) => q.body)).toEqual([
      { lora_name: 'old@w1.1' },
    ]);
    expect([...a.adapters.keys()]).toEqual(['live@w1.1']);
    expect(a.requestsTo('/reset_prefix_cache')).toEqual([]);
  });

  it('skips an adapter whose path vanished on a replica so the replica still comes back', async () => {
    const { fakes, engine, events } = await setup(2);
    const [a, b] = fakes;
    await engine.loadWeights({ name: 'gone', path: '/a/gone' });
    await a.stop();
    await engine.loadWeights({ name: 'live', path: '/a/live' });
    a.options.missingPaths = ['/a/gone'];
    a.adapters.clear(); // a restarted vLLM process forgets its adapters
    await a.restart();
    await engine.checkHealth();
    expect(healthy(engine)).toEqual([true, true]);
    expect([...a.adapters.keys()]).toEqual(['live@w1.1']);
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'adapter:dropped', adapter: 'gone', path: '/a/gone' }),
    );
    // Requests for it go to the replica that has it.
    for (let i = 0; i < 3; i += 1) {
      await engine.sample({
        prompt: [1],
        n: 1,
        maxTokens: 1,
        temperature: 1,
        topP: 1,
        model: 'gone',
      });
    }
    expect(a.completedModels).toEqual([]);
    expect(b.completedModels).toEqual(['gone@w1.1', 'gone@w1.1', 'gone@w1.1']);
    // Not retried on that replica at the next re-admission.
    await a.stop();
    await engine.loadWeights({ name: 'live', path: '/a/live-2' });
    a.adapters.clear();
    await a.restart();
    const before = a.requestsTo('/v1/load_lora_adapter').length;
    await engine.checkHealth();
    expect(
      a
        .requestsTo('/v1/load_lora_adapter')
        .slice(before)
        .map((q) => q.body),
    ).toEqual([{ lora_name: 'live@w1.2', lora_path: '/a/live-2' }]);
    expect(b.adapters.get('live@w1.2')).toBe('/a/live-2');
  });
});
