// A completion whose headers come only after a long generation (vLLM's non-streaming
// /v1/completions: vllm/entrypoints/openai/serving_completion.py@00463e62 collects every output
// before it answers). The timeout a user configures is the one in force end to end: undici's own
// header/body timeouts (300 s by default, undici lib/dispatcher/client.js@c0cf656e, v6.24.1 =
// Node 20.20's bundled fetch) are set from it, and a slow request on a replica whose /health
// passes leaves the replica in rotation. "Long" is scaled to under two seconds.
import { Agent, getGlobalDispatcher, setGlobalDispatcher } from 'undici';
import type { Dispatcher } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { EngineError } from '../http/errors.ts';
import { dispatcherFor } from '../http/request.ts';
import type { SampleRequest } from '../types.ts';
import { VllmInferenceEngine } from './client.ts';
import { resolveVllmConfig } from './config.ts';
import type { VllmEndpointConfig } from './config.ts';
import { FakeVllmServer } from '../../test/vllm/fake-server.ts';

const open: Array<{ close(): Promise<void> }> = [];
let saved: Dispatcher | undefined;
afterEach(async () => {
  if (saved !== undefined) setGlobalDispatcher(saved);
  saved = undefined;
  await Promise.all(open.splice(0).map((x) => x.close()));
});

const request: SampleRequest = {
  prompt: [5, 6],
  n: 1,
  maxTokens: 2,
  temperature: 1,
  topP: 1,
  seed: 1,
};

async function setup(holdHeadersMs: number, config: Partial<VllmEndpointConfig>) {
  const fake = await FakeVllmServer.start({ holdHeadersMs });
  const engine = new VllmInferenceEngine({
    name: 'slow',
    replicas: [fake.url],
    model: 'base-model',
    healthCheckIntervalMs: 0,
    retry: { attempts: 1 },
    ...config,
  });
  open.push(engine, fake);
  return { fake, engine };
}

/** undici keeps an Agent's options under Symbol(options) (undici 6.29.1, pinned). */
function agentOptions(agent: Agent): Record<string, unknown> {
  const key = Object.getOwnPropertySymbols(agent).find((s) => s.description === 'options');
  return (key === undefined ? {} : (agent as unknown as Record<symbol, unknown>)[key]) as Record<
    string,
    unknown
  >;
}

describe('vLLM completions longer than undici defaults', () => {
  it('default config: the dispatcher header/body timeouts are the configured request timeout', () => {
    const resolved = resolveVllmConfig({ name: 'e', replicas: ['http://x:1'], model: 'm' });
    expect(resolved.requestTimeoutMs).toBe(600_000);
    expect(agentOptions(dispatcherFor(resolved.requestTimeoutMs))).toMatchObject({
      headersTimeout: 600_000,
      bodyTimeout: 600_000,
    });
    // Never below a request's own timeout (its abort signal enforces that one exactly).
    expect(agentOptions(dispatcherFor(5_000))).toMatchObject({ headersTimeout: 60_000 });
    expect(agentOptions(dispatcherFor(900_001))).toMatchObject({ bodyTimeout: 960_000 });
    expect(dispatcherFor(1_000)).toBe(dispatcherFor(59_000)); // a shrinking remainder shares one
  });

  it('succeeds past the fetch default cap when within the configured timeout', async () => {
    // The process-wide dispatcher stands for undici's hidden 300 s default cap, scaled to 200 ms
    // (undici checks its timeouts on a ~1 s tick, so the headers come 2.5 s late).
    saved = getGlobalDispatcher();
    setGlobalDispatcher(new Agent({ headersTimeout: 200, bodyTimeout: 200 }));
    const { engine, fake } = await setup(2_500, { requestTimeoutMs: 6_000 });
    await expect(engine.sample(request)).resolves.toHaveLength(1);
    expect(fake.completedModels).toEqual(['base-model']);
    expect(engine.stats().replicas[0]?.healthy).toBe(true);
  });

  it('fails with a clear timeout error below it, and the healthy replica stays in rotation', async () => {
    const { engine, fake } = await setup(1_500, { requestTimeoutMs: 300 });
    const error = (await engine.sample(request).catch((e: unknown) => e)) as EngineError;
    expect(error).toBeInstanceOf(EngineError);
    expect(error.code).toBe('ANNEAL_ERR_ENGINE_TIMEOUT');
    expect(error.message).toBe(
      `vLLM endpoint 'slow' (${fake.url}/v1/completions): no reply within 300 ms`,
    );
    expect(engine.stats().replicas).toEqual([{ url: fake.url, healthy: true, inFlight: 0 }]);
  });
});
