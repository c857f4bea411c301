// Completion replies read into reused buffers (http/byte-pool.ts). vLLM sends every non-streaming
// reply with its `content-length` — Starlette's `Response.init_headers` sets it from the rendered
// body (starlette/responses.py@1f6b2305), and the completions route returns a `JSONResponse`
// (vllm/entrypoints/openai/serving_completion.py@00463e62) — so the client reads each body into
// one pooled buffer and gives it back once the sequences are copied out.
import { afterEach, describe, expect, it } from 'vitest';
import { processBytePool } from '../http/byte-pool.ts';
import type { SampleRequest } from '../types.ts';
import { VllmInferenceEngine } from './client.ts';
import { FakeVllmServer } from '../../test/vllm/fake-server.ts';
import { plainSequences } from '../../test/plain-sequences.ts';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
});

const request = (seed: number): SampleRequest => ({
  prompt: [5, 6, 7],
  n: 16,
  maxTokens: 512, // 16 × 512 tokens with logprobs: ~500 kB of reply
  temperature: 1,
  topP: 1,
  seed,
});

describe('vLLM completion replies in pooled buffers', () => {
  it('the fake answers with the body length, as vLLM does', async () => {
    const fake = await FakeVllmServer.start();
    open.push(fake);
    const response = await fetch(`${fake.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'base-model', prompt: [1, 2], max_tokens: 4, logprobs: 0 }),
    });
    const body = new Uint8Array(await response.arrayBuffer());
    expect(response.headers.get('transfer-encoding')).toBeNull();
    expect(Number(response.headers.get('content-length'))).toBe(body.byteLength);
  });

  it('reuses a reply buffer without changing sequences already returned', async () => {
    const fake = await FakeVllmServer.start();
    const engine = new VllmInferenceEngine({
      name: 'pooled',
      replicas: [fake.url],
      model: 'base-model',
      healthCheckIntervalMs: 0,
    });
    open.push(engine, fake);
    const first = await engine.sample(request(1));
    const firstCopy = plainSequences(first);
    const reusedBefore = processBytePool.stats().reused;
    const second = await engine.sample(request(2)); // read into the buffer `first` came from
    expect(processBytePool.stats().reused).toBeGreaterThan(reusedBefore);
    expect(plainSequences(second)).not.toEqual(firstCopy);
    expect(plainSequences(first)).toEqual(firstCopy);
    // the same seed samples the same sequences (the fake is deterministic): read again, equal
    expect(plainSequences(await engine.sample(request(1)))).toEqual(firstCopy);
  });
});
