// Contract tests of VllmInferenceEngine.sample against the fake vLLM server over loopback HTTP.
import { afterEach, describe, expect, it } from 'vitest';
import { fakeTimers } from '../../test/fake-timers.ts';
import { EngineError } from '../http/errors.ts';
import type { SampleRequest } from '../types.ts';
import { VllmInferenceEngine } from './client.ts';
import type { VllmEndpointConfig } from './config.ts';
import type { VllmEvent } from './transport.ts';
import { errorBody, fakeLogprob } from '../../test/vllm/fixtures.ts';
import { FakeVllmServer } from '../../test/vllm/fake-server.ts';
import { plainSequences } from '../../test/plain-sequences.ts';
import type { FakeVllmOptions } from '../../test/vllm/fake-server.ts';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
});

async function setup(
  server: FakeVllmOptions = {},
  config: Partial<VllmEndpointConfig> = {},
): Promise<{
  fake: FakeVllmServer;
  engine: VllmInferenceEngine;
  events: VllmEvent[];
  sleeps: number[];
}> {
  const fake = await FakeVllmServer.start(server);
  const time = fakeTimers();
  const events: VllmEvent[] = [];
  const engine = new VllmInferenceEngine(
    {
      name: 'vllm-test',
      replicas: [fake.url],
      model: 'base-model',
      healthCheckIntervalMs: 0,
      retry: { attempts: 3, baseDelayMs: 100, maxDelayMs: 1000 },
      ...config,
    },
    { timers: time.timers, onEvent: (e) => events.push(e) },
  );
  open.push(engine, fake);
  return { fake, engine, events, sleeps: time.sleeps };
}

const request: SampleRequest = {
  prompt: [11, 22, 33],
  n: 3,
  maxTokens: 5,
  temperature: 1,
  topP: 1,
  seed: 7,
};

describe('vLLM completions contract', () => {
  it('samples without logprobs when asked: none sent, none read, the same ids (vllm/entrypoints/openai/completion/serving.py@030ea52e writes "logprobs": null)', async () => {
    const { fake, engine } = await setup({ shape: 'new' });
    const scored = await engine.sample(request);
    const unscored = await engine.sample({ ...request, logprobs: false });
    const [withLogprobs, without] = fake.requestsTo('/v1/completions');
    expect(withLogprobs?.body).toHaveProperty('logprobs', 0);
    expect(without?.body).not.toHaveProperty('logprobs');
    expect(unscored.map((s) => s.tokens)).toEqual(scored.map((s) => s.tokens));
    expect(unscored.map((s) => s.finishReason)).toEqual(scored.map((s) => s.finishReason));
    expect(unscored.every((s) => s.logprobs === null)).toBe(true);
    expect(scored.every((s) => s.logprobs?.length === s.tokens.length)).toBe(true);
  });

  it('asks an older server (no token_ids) again with logprobs, once, and from then on always', async () => {
    const { fake, engine } = await setup({ shape: 'old' });
    const scored = await engine.sample(request);
    const first = await engine.sample({ ...request, logprobs: false });
    const second = await engine.sample({ ...request, logprobs: false });
    const sent = fake
      .requestsTo('/v1/completions')
      .map((r) => (r.body as { logprobs?: number }).logprobs);
    // scored; unscored (no ids in its reply) then again with logprobs; then with logprobs at once
    expect(sent).toEqual([0, undefined, 0, 0]);
    expect(first.map((s) => s.tokens)).toEqual(scored.map((s) => s.tokens));
    expect(second.map((s) => s.tokens)).toEqual(scored.map((s) => s.tokens));
  });

  it('sends a token-id prompt with n, max_tokens, logprobs 0, return_token_ids and neutral top_k/min_p/repetition_penalty (never the model generation_config defaults)', async () => {
    const { fake, engine } = await setup();
    await engine.sample({ ...request, stopTokenIds: [2], temperature: 0.7, topP: 0.9 });
    const [sent] = fake.requestsTo('/v1/completions');
    expect(sent?.body).toEqual({
      model: 'base-model',
      prompt: [11, 22, 33],
      n: 3,
      max_tokens: 5,
      temperature: 0.7,
      top_p: 0.9,
      top_k: -1,
      min_p: 0,
      repetition_penalty: 1,
      seed: 7,
      stop_token_ids: [2],
      logprobs: 0,
      return_token_ids: true,
      return_tokens_as_token_ids: true,
      skip_special_tokens: false,
    });
  });

  it('returns token ids and sampling logprobs per choice (new shape: token_ids)', async () => {
    const { engine } = await setup({ shape: 'new' });
    const out = plainSequences(await engine.sample(request));
    expect(out).toHaveLength(3);
    // The fake samples token i of choice k as (sum(prompt) + 31 (seed + k) + 7 i) % vocab.
    expect(out[0]?.tokens).toEqual([66 + 217, 66 + 224, 66 + 231, 66 + 238, 66 + 245]);
    expect(out[1]?.tokens[0]).toBe(66 + 31 * 8);
    for (const seq of out) {
      expect(seq.logprobs).toEqual(seq.tokens.map(fakeLogprob));
      expect(seq.finishReason).toBe('length');
    }
  });

  it('parses the old shape ("token_id:{id}" strings, explicit nulls) identically', async () => {
    const fresh = await setup({ shape: 'new' });
    const old = await setup({ shape: 'old' });
    const expected = plainSequences(await fresh.engine.sample(request));
    expect(plainSequences(await old.engine.sample(request))).toEqual(expected);
  });

  it('reports a stop token as finish reason stop, keeping the token', async () => {
    const { engine } = await setup({ stopAfter: 2 });
    const [seq] = await engine.sample({ ...request, n: 1, stopTokenIds: [2] });
    expect(seq?.tokens).toHaveLength(3);
    expect(seq?.tokens[2]).toBe(2);
    expect(seq?.finishReason).toBe('stop');
  });

  it.each(['new', 'old'] as const)(
    'surfaces a %s-envelope 404 with endpoint, replica and message, unretried',
    async (shape) => {
      const { fake, engine } = await setup({ shape });
      const error = await engine
        .sample({ ...request, model: 'missing-lora' })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(EngineError);
      const message = (error as EngineError).message;
      expect(message).toContain("vLLM endpoint 'vllm-test'");
      expect(message).toContain(`${fake.url}/v1/completions`);
      expect(message).toContain('HTTP 404 NotFoundError: The model `missing-lora` does not exist.');
      expect((error as EngineError).status).toBe(404);
      expect(fake.requestsTo('/v1/completions')).toHaveLength(1);
    },
  );

  it('surfaces the API-key middleware 401 {"error":"Unauthorized"}; the right key works', async () => {
    const wrong = await setup({ apiKey: 'sk-right' }, { apiKey: 'sk-wrong' });
    await expect(wrong.engine.sample(request)).rejects.toThrow('HTTP 401: Unauthorized');
    const right = await setup({ apiKey: 'sk-right' }, { apiKey: 'sk-right' });
    await expect(right.engine.sample(request)).resolves.toHaveLength(3);
    expect(right.fake.requests[0]?.headers.authorization).toBe('Bearer sk-right');
  });

  it('marks a prompt that alone overflows the window as a context_overflow rollout', async () => {
    // An older server: no max_model_len in /v1/models, so only the 400 tells the window.
    const { fake, engine, events } = await setup({ maxModelLen: 8, reportMaxModelLen: false });
    const out = await engine.sample({ ...request, prompt: [1, 2, 3, 4, 5, 6, 7, 8], maxTokens: 6 });
    expect(out).toEqual(
      Array.from({ length: 3 }, () => ({
        tokens: [],
        logprobs: [],
        finishReason: 'context_overflow',
      })),
    );
    expect(fake.requestsTo('/v1/completions')).toHaveLength(1); // nothing left to clamp to
    expect(events).toContainEqual({
      type: 'rollout:context_overflow',
      endpoint: 'vllm-test',
      promptTokens: 8,
    });
  });

  for (const generation of ['v0.11', 'current'] as const) {
    it(`on a ${generation} context-overflow 400, retries once with max_tokens = N - prompt and remembers N`, async () => {
      const { fake, engine, events } = await setup({
        generation,
        maxModelLen: 8,
        reportMaxModelLen: false,
      });
      const out = await engine.sample({ ...request, maxTokens: 6 });
      expect(out.map((s) => [s.tokens.length, s.finishReason])).toEqual([
        [5, 'length'],
        [5, 'length'],
        [5, 'length'],
      ]);
      const sent = fake
        .requestsTo('/v1/completions')
        .map((q) => (q.body as { max_tokens: number }).max_tokens);
      expect(sent).toEqual([6, 5]);
      expect(events.some((e) => e.type === 'rollout:context_overflow')).toBe(false);
      await engine.sample({ ...request, n: 1, maxTokens: 100 }); // clamped up front now
      expect(fake.requestsTo('/v1/completions').at(-1)?.body).toMatchObject({ max_tokens: 5 });
      expect(fake.requestsTo('/v1/models')).toHaveLength(1);
    });
  }

  it('learns the window from the current "max_tokens=M cannot be greater than max_model_len" 400', async () => {
    const { fake, engine } = await setup({
      generation: 'current',
      maxModelLen: 8,
      reportMaxModelLen: false,
    });
    const [seq] = await engine.sample({ ...request, n: 1, maxTokens: 100 });
    expect(seq?.tokens).toHaveLength(5);
    const sent = fake
      .requestsTo('/v1/completions')
      .map((q) => (q.body as { max_tokens: number }).max_tokens);
    expect(sent).toEqual([100, 5]);
  });

  it('a 400 overflow without a stated limit is a context_overflow rollout, not a failure', async () => {
    const { fake, engine } = await setup({ reportMaxModelLen: false });
    const message = "This model's maximum context length was exceeded.";
    fake.enqueue('/v1/completions', {
      kind: 'reply',
      status: 400,
      body: errorBody('old', 400, 'BadRequestError', message),
    });
    const out = await engine.sample(request);
    expect(out.map((s) => s.finishReason)).toEqual(Array(3).fill('context_overflow'));
  });

  it('learns the window from GET /v1/models (max_model_len) once and clamps before sending', async () => {
    const { fake, engine } = await setup({ maxModelLen: 8 });
    const [seq] = await engine.sample({ ...request, n: 1, maxTokens: 100 });
    expect(seq?.tokens).toHaveLength(5);
    const routes = fake.requests.map((q) => `${q.method} ${q.path}`);
    expect(routes).toEqual(['GET /v1/models', 'POST /v1/completions']);
    expect(fake.requestsTo('/v1/completions')[0]?.body).toMatchObject({ max_tokens: 5 });
    const full = await engine.sample({ ...request, prompt: [1, 2, 3, 4, 5, 6, 7, 8], n: 2 });
    expect(full.map((s) => s.finishReason)).toEqual(['context_overflow', 'context_overflow']);
    expect(fake.requests).toHaveLength(2); // no second discovery, no request for the full prompt
  });

  it('a failed discovery does not fail sampling and is tried again later', async () => {
    const { fake, engine } = await setup({ maxModelLen: 8 });
    fake.enqueue('/v1/models', { kind: 'reply', status: 500, body: { detail: 'boom' } });
    const [first] = await engine.sample({ ...request, n: 1, maxTokens: 4 });
    expect(first?.tokens).toHaveLength(4);
    await engine.sample({ ...request, n: 1, maxTokens: 100 });
    expect(fake.requestsTo('/v1/models')).toHaveLength(2);
    expect(fake.requestsTo('/v1/completions').at(-1)?.body).toMatchObject({ max_tokens: 5 });
  });

  it('with maxModelLen configured, clamps max_tokens and skips prompts that fill the window', async () => {
    const { fake, engine } = await setup({ maxModelLen: 8 }, { maxModelLen: 8 });
    const [seq] = await engine.sample({ ...request, n: 1, maxTokens: 100 });
    expect(seq?.tokens).toHaveLength(5);
    expect((fake.requests[0]?.body as { max_tokens: number }).max_tokens).toBe(5);
    const full = await engine.sample({ ...request, prompt: [1, 2, 3, 4, 5, 6, 7, 8], n: 2 });
    expect(full.map((s) => s.finishReason)).toEqual(['context_overflow', 'context_overflow']);
    expect(fake.requestsTo('/v1/completions')).toHaveLength(1);
  });

  it('retries a 5xx with exponential backoff + jitter, then succeeds', async () => {
    const { fake, engine, events, sleeps } = await setup();
    const overloaded = errorBody('new', 503, 'ServiceUnavailableError', 'engine overloaded');
    fake.enqueue('/v1/completions', { kind: 'reply', status: 503, body: overloaded });
    fake.enqueue('/v1/completions', { kind: 'reply', status: 500, body: overloaded });
    await expect(engine.sample(request)).resolves.toHaveLength(3);
    expect(fake.requestsTo('/v1/completions')).toHaveLength(3);
    expect(sleeps).toHaveLength(2);
    expect(sleeps[0]).toBeGreaterThanOrEqual(50); // equal jitter: [cap/2, cap], cap 100 then 200
    expect(sleeps[0]).toBeLessThanOrEqual(100);
    expect(sleeps[1]).toBeGreaterThanOrEqual(100);
    expect(sleeps[1]).toBeLessThanOrEqual(200);
    expect(events.filter((e) => e.type === 'request:retry').map((e) => e.type)).toHaveLength(2);
  });

  it('gives up after the configured attempts with a clear error', async () => {
    const { fake, engine } = await setup({ shape: 'old' }, { failuresBeforeDrop: 10 });
    const body = errorBody('old', 500, 'InternalServerError', 'CUDA error: device-side assert');
    for (let i = 0; i < 3; i += 1)
      fake.enqueue('/v1/completions', { kind: 'reply', status: 500, body });
    const error = (await engine.sample(request).catch((e: unknown) => e)) as EngineError;
    expect(error.message).toBe(
      `vLLM endpoint 'vllm-test' (${fake.url}/v1/completions): HTTP 500 InternalServerError: ` +
        'CUDA error: device-side assert (gave up after 3 attempts)',
    );
    expect(error.attempts).toBe(3);
    expect(fake.requestsTo('/v1/completions')).toHaveLength(3);
  });

  it('does not retry other 4xx replies', async () => {
    const { fake, engine, sleeps } = await setup();
    const body = errorBody(
      'new',
      400,
      'BadRequestError',
      'top_k must be -1 (disable), or at least 1',
    );
    fake.enqueue('/v1/completions', { kind: 'reply', status: 400, body });
    await expect(engine.sample(request)).rejects.toThrow('HTTP 400 BadRequestError: top_k must be');
    expect(fake.requestsTo('/v1/completions')).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it('rejects a malformed request before any HTTP, naming the field', async () => {
    const { fake, engine } = await setup();
    await expect(engine.sample({ ...request, topP: 0 })).rejects.toThrow(
      '`topP` must be in (0, 1]',
    );
    await expect(engine.sample({ ...request, prompt: [1, -2] })).rejects.toThrow('`prompt[1]`');
    expect(fake.requests).toHaveLength(0);
  });
});
