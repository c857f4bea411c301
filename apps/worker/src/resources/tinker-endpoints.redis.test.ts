// Tinker-compatible endpoints in the operator config become the right clients: a trainer with
// a declared backend (its capabilities carry it, so a run hears about grad clipping it will not
// get) and hosted sampling (inference `type: tinker`), keyed by their secrets.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeTinkerServer } from '@anneal/engines/testing';
import { type OperatorConfig, parseOperatorConfig, parseRunSpec } from '@anneal/protocol';
import { createEventBus, noopLogger } from '@anneal/telemetry';
import { defineWorkerConfig, secretEnvNames } from '../config.ts';
import { STUB_EMBEDDED } from '../../test/fixtures/engines.ts';
import { type TestEnv, testEnv } from '../../test/helpers.ts';
import { EngineCache } from './engine-cache.ts';
import { defaultEngineFactories } from './factories.ts';
import { ResourceResolver } from './resolve.ts';

let env: TestEnv;
let tinker: FakeTinkerServer;
beforeEach(async () => {
  env = await testEnv();
  tinker = await FakeTinkerServer.start({ flavor: 'tinker', apiKey: 'secret-t', pendingPolls: 1 });
});
afterEach(async () => {
  await Promise.all([tinker.close(), env.cleanup()]);
});

function operatorConfig(): OperatorConfig {
  const parsed = parseOperatorConfig(`
pools: { default: {} }
inference:
  hosted: { type: tinker, url: "${tinker.url}", apiKeyEnv: TINKER_KEY, operationDeadlineSeconds: 600 }
trainers:
  skyrl:
    type: tinker
    url: ${tinker.url}
    apiKeyEnv: TINKER_KEY
    backend: skyrl-jax
    pollTimeoutSeconds: 400
    capabilities: { kinds: [sft, grpo, eval], losses: [cross_entropy, importance_sampling], reduction: mean_per_sequence }
baseModels:
  base: { model: base-model, tokenizer: byte }
search:
  web: { type: searxng, url: "http://searxng:8080" }
defaults: { pool: default, inference: hosted, trainer: skyrl, search: web, baseModel: base }
tenants: { default: {} }
tokens: [{ name: t, sha256: "${'b'.repeat(64)}", role: operator, tenant: default }]
`);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value;
}

function resolver(config: OperatorConfig) {
  return new ResourceResolver({
    store: env.store,
    config: defineWorkerConfig({ operatorConfig: config, secrets: { TINKER_KEY: 'secret-t' } }),
    factories: defaultEngineFactories(STUB_EMBEDDED),
    cache: new EngineCache(),
    telemetry: createEventBus(),
    logger: noopLogger,
  });
}

describe('Tinker-compatible endpoints', () => {
  it('samples through the service (type: tinker inference) and declares the trainer backend', async () => {
    const config = operatorConfig();
    expect(secretEnvNames(config)).toEqual(['TINKER_KEY']);
    const r = resolver(config);
    const spec = parseRunSpec('kind: grpo');
    if (!spec.ok) throw new Error(JSON.stringify(spec.errors));
    const resources = await r.resolve({ id: 'run_a', tenant: 'default', spec: spec.value });
    expect(resources.trainer.capabilities).toMatchObject({
      backend: 'skyrl-jax',
      reduction: 'mean_per_sequence',
    });
    const samples = await resources.inference.sample({
      prompt: [1, 2, 3],
      n: 2,
      maxTokens: 3,
      temperature: 1,
      topP: 1,
    });
    expect(samples.map((s) => s.logprobs?.length)).toEqual([3, 3]);
    const created = tinker.requests.find((q) => q.route === 'create_sampling_session');
    expect(created?.body).toMatchObject({ base_model: 'base-model' });
    expect(created?.headers['x-api-key']).toBe('secret-t');
    await r.close();
  });
});
