// The fake vLLM's throughput under sharing (benchmarks): continuous batching whose step time
// grows with the batch (vllm/batch-decode.ts, after vllm/v1/core/sched/scheduler.py@00024d31),
// adapter reads that stall the batch (vllm/lora-routes.ts `adapterReadMs`, after
// vllm/lora/worker_manager.py@0030b9ff `add_adapter`), and a trainer whose models share one
// compute queue (skyrl-tx/tx/tinker/engine.py@009abdce). Step and token counts are exact; times
// are asserted from below only (a timer never fires early).
import { afterEach, describe, expect, it } from 'vitest';
import { ContinuousBatch } from './vllm/batch-decode.ts';
import { FakeVllmServer } from './vllm/fake-server.ts';

const SLACK_MS = 5;
const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
});

describe('ContinuousBatch', () => {
  it('decodes every running sequence a token per step; a completion ends with its longest choice', async () => {
    const batch = new ContinuousBatch({ stepBaseMs: 2, stepPerSequenceMs: 0.5 });
    const start = performance.now();
    const ends: number[] = [];
    await Promise.all([
      batch.decode([9]).then(() => ends.push(performance.now() - start)),
      batch.decode([19, 19, 19, 5]).then(() => ends.push(performance.now() - start)),
    ]);
    // 1 + 19 steps for the longest; sequence-tokens: 10 + 3 × 20 + 6
    expect(batch.steps).toBe(20);
    expect(batch.decoded).toBe(76);
    expect(batch.peakBatch).toBe(5);
    expect(batch.batch).toBe(0);
    // the first 6 steps ran 5 sequences (4.5 ms), 4 more ran 4 (4 ms), 10 more ran 3 (3.5 ms)
    expect(Math.max(...ends)).toBeGreaterThanOrEqual(6 * 4.5 + 4 * 4 + 10 * 3.5 - SLACK_MS);
  });

  it('a step costs more with a larger batch: throughput grows sub-linearly', async () => {
    const options = { stepBaseMs: 1, stepPerSequenceMs: 1 };
    expect(new ContinuousBatch(options).stepMs(1)).toBe(2);
    const big = new ContinuousBatch(options);
    const start = performance.now();
    await big.decode(Array.from({ length: 8 }, () => 9));
    // 8 sequences × 10 steps at 9 ms a step: 8 × the tokens of one in 4.5 × its time
    expect(big.decoded).toBe(80);
    expect(performance.now() - start).toBeGreaterThanOrEqual(10 * 9 - SLACK_MS);
  });

  it('stall: no step runs while the engine reads an adapter', async () => {
    const batch = new ContinuousBatch({ stepBaseMs: 1, stepPerSequenceMs: 0 });
    const start = performance.now();
    batch.stall(60);
    await batch.decode([3]);
    expect(batch.steps).toBe(4);
    expect(batch.stalledMs).toBe(60);
    expect(performance.now() - start).toBeGreaterThanOrEqual(60 + 4 - SLACK_MS);
  });

  it('refuses a step time that is not positive', () => {
    expect(() => new ContinuousBatch({ stepBaseMs: 0, stepPerSequenceMs: 1 })).toThrow(
      /stepBaseMs/,
    );
  });
});

describe('FakeVllmServer batching and adapterReadMs', () => {
  const complete = (fake: FakeVllmServer, model: string) =>
    fetch(`${fake.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model, prompt: [1, 2, 3], n: 2, max_tokens: 8 }),
    });
  const load = (fake: FakeVllmServer, name: string) =>
    fetch(`${fake.url}/v1/load_lora_adapter`, {
      method: 'POST',
      body: JSON.stringify({ lora_name: name, lora_path: `/p/${name}` }),
    });

  it('an adapter evicted from the CPU LRU is re-read at its next request, the batch stalled meanwhile', async () => {
    const fake = await FakeVllmServer.start({
      maxLoras: 1,
      maxCpuLoras: 1,
      adapterReadMs: 40,
      batching: { stepBaseMs: 1, stepPerSequenceMs: 0 },
    });
    open.push(fake);
    expect((await load(fake, 'a')).status).toBe(200);
    expect((await load(fake, 'b')).status).toBe(200); // evicts a
    const start = performance.now();
    const reply = await complete(fake, 'a'); // re-reads a (evicting b)
    expect(reply.status).toBe(200);
    expect(performance.now() - start).toBeGreaterThanOrEqual(40 + 9 - SLACK_MS);
    expect(fake.lora.cache?.reads.map((r) => r.path)).toEqual(['/p/a', '/p/b', '/p/a']);
    expect(fake.batch?.stalledMs).toBe(3 * 40);
    expect(fake.served).toEqual([
      {
        requested: 'a',
        servedBy: 'a',
        tokens: 16,
        atMs: expect.any(Number),
        arrivedMs: expect.any(Number),
      },
    ]);
    expect(fake.served[0]!.arrivedMs).toBeLessThan(fake.served[0]!.atMs - 40); // the re-read
    expect(fake.batch?.decoded).toBe(18);
  });
});
