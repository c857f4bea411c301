// Hosted Tinker training paired with your own vLLM, resolved from the operator config as the
// worker does: each sampler export is downloaded through the service's archive route (a signed
// URL) into the vLLM endpoint's adapter storage, unpacked, and loaded as a new adapter version.
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseVersionedAdapterName, versionedAdapterName } from '@anneal/engines';
import { FakeTinkerServer, FakeVllmServer } from '@anneal/engines/testing';
import { parseRunSpec } from '@anneal/protocol';
import { type TestEnv, testEnv } from '../../test/helpers.ts';
import { resolverFromYaml } from '../../test/resolver.ts';
import { samplerExportName, servingNames } from '../executors/grpo/setup.ts';
import { syncWeights } from '../executors/common/weight-sync.ts';
let env: TestEnv;
let dir: string;
let vllm: FakeVllmServer;
let tinker: FakeTinkerServer;
beforeEach(async () => {
  env = await testEnv();
  dir = await mkdtemp(path.join(tmpdir(), 'anneal-hosted-'));
  vllm = await FakeVllmServer.start({ servedModel: 'base-model', maxLoraRank: 32 });
  tinker = await FakeTinkerServer.start({ flavor: 'tinker', apiKey: 'secret-t', pendingPolls: 1 });
});
afterEach(async () => {
  await Promise.all([vllm.close(), tinker.close(), env.cleanup()]);
  await rm(dir, { recursive: true, force: true });
});

function resolver(adapters: string) {
  return resolverFromYaml(
    env,
    `
pools: { default: {} }
inference:
  vllm: { type: vllm, replicas: ["${vllm.url}"], servedModel: base-model, maxLoraRank: 32${adapters} }
trainers:
  hosted:
    type: tinker
    url: ${tinker.url}
    apiKeyEnv: TINKER_KEY
    backend: tinker
    capabilities: { kinds: [grpo], losses: [importance_sampling], reduction: sum }
baseModels:
  base: { model: base-model, tokenizer: byte }
defaults: { pool: default, inference: vllm, trainer: hosted, baseModel: base }
tenants: { default: {} }
tokens: [{ name: t, sha256: "${'c'.repeat(64)}", role: operator, tenant: default }]
`,
    { dir, secrets: { TINKER_KEY: 'secret-t' } },
  );
}

const grpo = () => {
  const parsed = parseRunSpec('kind: grpo');
  if (!parsed.ok) throw new Error('spec');
  return parsed.value;
};

describe('hosted Tinker + your own vLLM', () => {
  it('downloads each export into the adapter storage, then vLLM loads the unpacked adapter', async () => {
    const root = path.join(dir, 'adapters');
    const r = resolver(`, adapters: { root: ${JSON.stringify(root)} }`);
    const resources = await r.resolve({ id: 'run_h', tenant: 'default', spec: grpo() });
    const model = await resources.trainer.createModel({ baseModel: 'base-model', loraRank: 8 });
    const policy = servingNames('run_h').policy;
    for (const step of [0, 1]) {
      await syncWeights(model, resources.inference, samplerExportName('run_h', step), policy);
    }
    const loads = vllm
      .requestsTo('/v1/load_lora_adapter')
      .map((q) => q.body as { lora_name: string; lora_path: string });
    const instance = parseVersionedAdapterName(loads[0]?.lora_name ?? '')?.instance ?? '?';
    expect(loads.map((l) => l.lora_name)).toEqual([
      versionedAdapterName(policy, instance, 1),
      versionedAdapterName(policy, instance, 2),
    ]);
    for (const [step, load] of loads.entries()) {
      expect(load.lora_path).toBe(
        path.join(root, model.id, 'sampler_weights', samplerExportName('run_h', step)),
      );
      // the worker created the model with train_unembed: false, so vLLM sees only its modules
      expect(vllm.adapterTensorModules.get(load.lora_path)).toEqual([
        'model.layers.0.self_attn.q_proj',
      ]);
    }
    // The served version's adapter is there; the superseded one's download and directory are
    // removed once no replica lists it (this worker's copies, not the trainer's checkpoint).
    const [first, second] = loads.map((l) => l.lora_path) as [string, string];
    expect((await readdir(second)).sort()).toEqual([
      'adapter_config.json',
      'adapter_model.safetensors',
      'checkpoint_complete', // required of a hosted archive, as the tinker SDK does
    ]);
    expect(existsSync(first) || existsSync(`${first}.tar.gz`)).toBe(false);
    expect(existsSync(`${second}.tar.gz`)).toBe(true);
    await resources.inference.releaseWeights?.(policy);
    expect(existsSync(second) || existsSync(`${second}.tar.gz`)).toBe(false);
    await r.close();
  });

  it('refuses the pairing at run setup when the vLLM endpoint has no adapter storage', async () => {
    const r = resolver('');
    await expect(r.resolve({ id: 'run_n', tenant: 'default', spec: grpo() })).rejects.toThrow(
      /no adapters.root, where the exports of hosted Tinker trainer 'hosted' are downloaded/,
    );
    await r.close();
  });
});
