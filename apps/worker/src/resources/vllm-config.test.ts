import { describe, expect, it } from 'vitest';
import { parseOperatorConfig } from '@anneal/protocol';
import { RunSetupError } from '../errors.ts';
import { vllmEndpointConfig } from './vllm-config.ts';

function entry(extra: string) {
  const parsed = parseOperatorConfig(`
pools: { default: {} }
inference: { q: { type: vllm, replicas: ["http://vllm-0.vllm:8000"], apiKeyEnv: K${extra} } }
tenants: { default: {} }
tokens: [{ name: t, sha256: "${'d'.repeat(64)}", role: operator, tenant: default }]
`);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  const e = parsed.value.inference.q;
  if (e?.type !== 'vllm') throw new Error('not vllm');
  return e;
}

describe('vllmEndpointConfig', () => {
  it('passes every operator setting to the client, in its units', () => {
    const config = vllmEndpointConfig(
      'q',
      entry(
        ', servedModel: s, maxModelLen: 8192, maxInFlight: 7, requestTimeoutSeconds: 1.5,' +
          ' retryAttempts: 3, adapters: { root: /mnt/c }, maxLoraRank: 64, readerThreads: 2',
      ),
      { baseModel: 'Qwen/Qwen3-8B' },
      { secrets: { K: 'key' } },
    );
    expect(config).toMatchObject({
      name: 'q',
      replicas: ['http://vllm-0.vllm:8000'],
      model: 's',
      apiKey: 'key',
      maxModelLen: 8192,
      maxInFlight: 7,
      requestTimeoutMs: 1500,
      retry: { attempts: 3 },
      maxLoraRank: 64,
      readerThreads: 2,
    });
    expect(config.resolveLoraPath?.({ name: 'p', path: 'tinker://m/n' })).toBe(
      '/mnt/c/m/sampler_weights/n',
    );
  });

  it("defaults the served model to the run's base model and leaves maxModelLen to discovery", () => {
    const config = vllmEndpointConfig('q', entry(''), { baseModel: 'b' }, { secrets: {} });
    expect(config.model).toBe('b');
    expect(config.maxModelLen).toBeUndefined();
    expect(config.resolveLoraPath).toBeUndefined();
    expect(config.maxLoraRank).toBeUndefined(); // the client's default: vLLM's 16
  });

  it('a bad adapter storage (config not validated by the schema) is a set-up error', () => {
    const bad = { ...entry(''), adapters: { root: 'relative' } };
    expect(() => vllmEndpointConfig('q', bad, { baseModel: 'b' }, { secrets: {} })).toThrow(
      RunSetupError,
    );
  });
});
