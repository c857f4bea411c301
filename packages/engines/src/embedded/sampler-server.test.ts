// The embedded sampler server through Anneal's production vLLM client (weight sync, sampling,
// release) and capability probe: it samples what the in-process ONNX sampler samples from the
// same export and seed, keeps at most maxLoras sets resident (an evicted one is read again on
// use), names the set that served each completion, and answers refusals with vLLM's statuses and
// bodies (the vLLM fake in test/vllm cites them).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomParams, smallConfig } from '../../test/embedded/fixtures.ts';
import { plainSequences } from '../../test/plain-sequences.ts';
import { VllmInferenceEngine } from '../vllm/client.ts';
import { maxLorasOf } from '../vllm/probe.ts';
import { exportOnnx } from './onnx-export.ts';
import { EmbeddedInferenceEngine } from './onnx-sampler.ts';
import { EMBEDDED_SAMPLER_OWNER, EmbeddedSamplerServer } from './sampler-server.ts';

const config = smallConfig('lm', 48);
const prompt = [257, 72, 105, 33, 32];
let dir: string;
let server: EmbeddedSamplerServer;
let url: string;
let client: VllmInferenceEngine;
const exports: Record<'a' | 'b', string> = { a: '', b: '' };

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'anneal-sampler-server-'));
  for (const [key, seed] of [
    ['a', 3],
    ['b', 4],
  ] as const) {
    exports[key] = path.join(dir, key);
    await exportOnnx(exports[key], config, randomParams(config, seed, 0.3));
  }
  server = new EmbeddedSamplerServer({
    servedModel: 'tiny',
    maxLoras: 1,
    maxModelLen: 48,
    apiKey: 'k',
    engine: { threads: 1 },
  });
  url = await server.listen();
  client = new VllmInferenceEngine(
    { name: 'emb', replicas: [url], model: 'tiny', apiKey: 'k', healthCheckIntervalMs: 0 },
    { adapterInstance: 'i1' },
  );
}, 60_000);
afterAll(async () => {
  await client.close();
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

const request = { prompt, n: 3, maxTokens: 8, temperature: 1, topP: 0.95, seed: 11 };

async function metrics(): Promise<string> {
  return (await fetch(`${url}/metrics`)).text();
}
const counter = (text: string, name: string) =>
  Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1]);

async function post(route: string, body: unknown, key = 'k') {
  const res = await fetch(`${url}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  const json = res.headers.get('content-type')?.startsWith('application/json');
  return { status: res.status, body: json ? (JSON.parse(text) as unknown) : text };
}

describe('EmbeddedSamplerServer behind the vLLM client', () => {
  it('samples what the in-process sampler samples; at most maxLoras sets resident, an evicted one read again', async () => {
    const local = new EmbeddedInferenceEngine({ threads: 1 });
    const expected = { a: [] as unknown[], b: [] as unknown[] };
    try {
      for (const key of ['a', 'b'] as const) {
        await local.loadWeights({ name: key, path: exports[key] });
        // through the vLLM client the logprobs are float32 (TokenValues): the same, rounded once
        expected[key] = plainSequences(await local.sample({ ...request, model: key })).map((s) => ({
          ...s,
          logprobs: s.logprobs?.map(Math.fround) ?? null,
        }));
      }
    } finally {
      await local.close();
    }
    await client.loadWeights({ name: 'run_a-policy', path: exports.a });
    expect(plainSequences(await client.sample({ ...request, model: 'run_a-policy' }))).toEqual(
      expected.a,
    );
    await client.loadWeights({ name: 'run_b-policy', path: exports.b }); // evicts run_a's set
    expect(plainSequences(await client.sample({ ...request, model: 'run_b-policy' }))).toEqual(
      expected.b,
    );
    expect(plainSequences(await client.sample({ ...request, model: 'run_a-policy' }))).toEqual(
      expected.a,
    );
    const text = await metrics();
    expect(maxLorasOf(text)).toBe(1); // what `anneal endpoints check` compares with maxLoras
    expect(counter(text, 'anneal_sampler_weight_sets_listed')).toBe(2);
    expect(counter(text, 'anneal_sampler_weight_sets_resident_peak')).toBe(1);
    expect(counter(text, 'anneal_sampler_weight_set_reads_total')).toBe(3);
    expect(counter(text, 'anneal_sampler_weight_set_evictions_total')).toBe(2);
    const models = (await (
      await fetch(`${url}/v1/models`, { headers: { authorization: 'Bearer k' } })
    ).json()) as {
      data: Array<{ id: string; root: string; parent: string | null; owned_by: string }>;
    };
    expect(models.data.map((c) => [c.id, c.root, c.parent, c.owned_by])).toEqual([
      ['tiny', 'tiny', null, EMBEDDED_SAMPLER_OWNER],
      ['run_a-policy@i1.1', exports.a, 'tiny', EMBEDDED_SAMPLER_OWNER],
      ['run_b-policy@i1.1', exports.b, 'tiny', EMBEDDED_SAMPLER_OWNER],
    ]);
    expect(server.servedCompletions()).toEqual([
      { requested: 'run_a-policy@i1.1', served: 'run_a-policy@i1.1', path: exports.a, count: 2 },
      { requested: 'run_b-policy@i1.1', served: 'run_b-policy@i1.1', path: exports.b, count: 1 },
    ]);
    await client.releaseWeights('run_a-policy');
    await client.releaseWeights('run_b-policy');
    const after = await metrics();
    expect(counter(after, 'anneal_sampler_weight_sets_listed')).toBe(0);
    expect(counter(after, 'anneal_sampler_weight_sets_resident')).toBe(0);
  }, 60_000);

  it("answers refusals with vLLM's statuses and bodies", async () => {
    const missing = path.join(dir, 'nowhere');
    const error = (status: number, type: string, message: string) => ({
      status,
      body: { error: { message, type, param: null, code: status } },
    });
    expect(await post('/v1/load_lora_adapter', { lora_name: 'x', lora_path: missing })).toEqual(
      error(404, 'NotFoundError', `Loading lora x failed: No adapter found for ${missing}`),
    );
    expect(await post('/v1/load_lora_adapter', { lora_name: 'x', lora_path: exports.a })).toEqual({
      status: 200,
      body: "Success: LoRA adapter 'x' added successfully.",
    });
    expect(await post('/v1/load_lora_adapter', { lora_name: 'x', lora_path: exports.b })).toEqual(
      error(400, 'InvalidUserInput', "The lora adapter 'x' has already been loaded."),
    );
    const completion = { model: 'x', prompt, max_tokens: 4, logprobs: 0 };
    expect(await post('/v1/completions', { ...completion, top_k: 5 })).toMatchObject({
      status: 400,
      body: {
        error: { type: 'BadRequestError', message: expect.stringMatching(/^top_k must be -1/) },
      },
    });
    expect(await post('/v1/completions', { ...completion, max_tokens: 45 })).toEqual(
      error(
        400,
        'BadRequestError',
        "This model's maximum context length is 48 tokens. However, you requested 50 tokens " +
          '(5 in the messages, 45 in the completion). Please reduce the length of the messages ' +
          'or completion.',
      ),
    );
    expect(await post('/v1/completions', { ...completion, prompt: [1, 9999] })).toEqual(
      error(400, 'BadRequestError', 'prompt[1] = 9999 is outside the vocabulary (264)'),
    );
    expect(await post('/v1/completions', { ...completion, model: 'y' })).toEqual(
      error(404, 'NotFoundError', 'The model `y` does not exist.'),
    );
    expect(await post('/v1/completions', completion, 'wrong')).toEqual({
      status: 401,
      body: { error: 'Unauthorized' },
    });
    expect(await post('/v1/unload_lora_adapter', { lora_name: 'x' })).toEqual({
      status: 200,
      body: "Success: LoRA adapter 'x' removed successfully.",
    });
    expect(await post('/v1/unload_lora_adapter', { lora_name: 'x' })).toEqual(
      error(404, 'NotFoundError', "The lora adapter 'x' cannot be found."),
    );
    expect(await post('/reset_prefix_cache', {})).toEqual({
      status: 404,
      body: { detail: 'Not Found' },
    });
  }, 30_000);
});
