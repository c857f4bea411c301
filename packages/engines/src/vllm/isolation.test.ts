// Isolation between runs on one vLLM server (docs/security.md "Isolation between runs"). Two
// runs, each on its own engine (as on two worker processes), share one fake server; the fake
// records which adapter served every completion. vLLM's reply names the adapter the request was
// resolved to (`model_name(lora_request)`: vllm/entrypoints/openai/serving_completion.py@00463e62
// `create_completion`, vllm/entrypoints/openai/serving_models.py@075e9ba8 `model_name`), so a
// server that serves a request with another adapter (vLLM#47724) is caught by the client and the
// request fails, never retried.
import { afterEach, describe, expect, it } from 'vitest';
import { fakeTimers } from '../../test/fake-timers.ts';
import { FakeVllmServer } from '../../test/vllm/fake-server.ts';
import type { FakeVllmOptions } from '../../test/vllm/fake-server.ts';
import { EngineError } from '../http/errors.ts';
import { VllmInferenceEngine } from './client.ts';
import { replyModel } from './reply-model.ts';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
});

async function twoRunsOn(options: FakeVllmOptions = {}) {
  const fake = await FakeVllmServer.start({ maxLoras: 8, ...options });
  open.push(fake);
  const engineFor = () => {
    const engine = new VllmInferenceEngine(
      {
        name: 'shared',
        replicas: [fake.url],
        model: 'base-model',
        healthCheckIntervalMs: 0,
        retry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 1 },
      },
      { timers: fakeTimers().timers },
    );
    open.push(engine);
    return engine;
  };
  const runs = { run_a: engineFor(), run_b: engineFor() };
  for (const [run, engine] of Object.entries(runs)) {
    await engine.loadWeights({ name: `${run}-reference`, path: `/shared/${run}/reference` });
    await engine.loadWeights({ name: `${run}-policy`, path: `/shared/${run}/step-1` });
  }
  return { fake, runs };
}

const runOf = (adapter: string) => adapter.slice(0, adapter.indexOf('-'));

describe('two runs on one vLLM server', () => {
  it('every request is served by an adapter of the run that sent it', async () => {
    const { fake, runs } = await twoRunsOn();
    // A new policy version of run_a mid-way: its requests move to the new adapter name.
    const samples = Object.entries(runs).flatMap(([run, engine]) =>
      Array.from({ length: 12 }, (_, i) =>
        engine.sample({
          prompt: [1, 2, i],
          n: 2,
          maxTokens: 4,
          temperature: 1,
          topP: 1,
          model: `${run}-${i % 2 === 0 ? 'policy' : 'reference'}`,
        }),
      ),
    );
    await runs.run_a.loadWeights({ name: 'run_a-policy', path: '/shared/run_a/step-2' });
    samples.push(
      runs.run_a.sample({
        prompt: [3],
        n: 1,
        maxTokens: 4,
        temperature: 1,
        topP: 1,
        model: 'run_a-policy',
      }),
    );
    await Promise.all(samples);
    expect(fake.served).toHaveLength(25);
    for (const { requested, servedBy } of fake.served) {
      expect({ requested, servedBy }).toEqual({ requested, servedBy: requested });
    }
    const byRun = (run: string) => fake.served.filter((s) => runOf(s.servedBy) === run).length;
    expect([byRun('run_a'), byRun('run_b')]).toEqual([13, 12]);
    // Every adapter name served carries its run and a 64-bit engine id.
    for (const { servedBy } of fake.served) {
      expect(servedBy).toMatch(/^run_[ab]-(policy|reference)@[0-9a-f]{16}\.[12]$/);
    }
  });

  it("fails the request, unretried, when the server serves it with another run's adapter", async () => {
    const { fake, runs } = await twoRunsOn({
      crossServe: (requested, loaded) =>
        requested.startsWith('run_a-')
          ? loaded.find((name) => name.startsWith('run_b-policy'))
          : undefined,
    });
    const error = await runs.run_a
      .sample({ prompt: [1], n: 1, maxTokens: 4, temperature: 1, topP: 1, model: 'run_a-policy' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EngineError);
    expect((error as EngineError).code).toBe('ANNEAL_ERR_ENGINE_ADAPTER_MISMATCH');
    expect((error as Error).message).toMatch(
      /requested from 'run_a-policy@[0-9a-f]{16}\.1' but the reply says it was served by 'run_b-policy@[0-9a-f]{16}\.1'/,
    );
    expect(fake.served).toMatchObject([
      {
        requested: expect.stringMatching(/^run_a-policy@/),
        servedBy: expect.stringMatching(/^run_b-policy@/),
      },
    ]);
    // run_b is served right on the same server.
    await runs.run_b.sample({
      prompt: [1],
      n: 1,
      maxTokens: 4,
      temperature: 1,
      topP: 1,
      model: 'run_b-policy',
    });
    expect(fake.served.at(-1)?.servedBy).toMatch(/^run_b-policy@/);
  });
});

describe('replyModel', () => {
  const bytes = (text: string) => ({
    status: 200,
    json: undefined,
    text: '',
    bytes: Buffer.from(text),
  });

  it("reads the envelope's model, never a model-like string inside the choices", () => {
    expect(
      replyModel(
        bytes(
          '{"id":"c","model":"run_a-policy@x.1","choices":[{"text":"\\"model\\":\\"evil\\""}]}',
        ),
      ),
    ).toBe('run_a-policy@x.1');
    expect(replyModel(bytes('{"id":"c","choices":[{"text":"","model":"evil"}]}'))).toBeUndefined();
    expect(replyModel({ status: 200, json: { model: 'base' }, text: '' })).toBe('base');
  });
});
