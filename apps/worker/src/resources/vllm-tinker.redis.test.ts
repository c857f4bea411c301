// The production pairing end to end: a Tinker trainer endpoint (the embedded trainer served
// over the Tinker HTTP subset) + a vLLM endpoint (the fake vLLM server), resolved from the
// operator config exactly as the worker does. GRPO's weight sync must reach vLLM with the
// adapter path mapped onto the storage the replicas mount (docs/engines.md "Weight sync").
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  DEFAULT_BASE_MODEL,
  EmbeddedTrainer,
  EmbeddedTrainerServer,
  parseVersionedAdapterName,
  versionedAdapterName,
} from '@anneal/engines';
import { FakeVllmServer } from '@anneal/engines/testing';
import { parseRunSpec, type RunSpec } from '@anneal/protocol';
import { type TestEnv, testEnv } from '../../test/helpers.ts';
import { resolverFromYaml } from '../../test/resolver.ts';
import { samplerExportName, servingNames } from '../executors/grpo/setup.ts';
import { syncWeights } from '../executors/common/weight-sync.ts';
import { trackServedWeights } from './served-weights.ts';

let env: TestEnv;
let dir: string;
let vllm: FakeVllmServer;
let trainer: EmbeddedTrainer;
let server: EmbeddedTrainerServer;
let trainerUrl: string;

beforeEach(async () => {
  env = await testEnv();
  dir = await mkdtemp(path.join(tmpdir(), 'anneal-vllm-tinker-'));
  // The embedded trainer exports ONNX, not PEFT adapters: the fake must not read them.
  vllm = await FakeVllmServer.start({
    servedModel: 'served-tiny',
    maxModelLen: 512,
    checkAdapterFiles: false,
  });
  // The trainer's checkpoint base; in production the vLLM hosts mount it (here: same host).
  trainer = new EmbeddedTrainer({ artifactDir: path.join(dir, 'checkpoints'), threads: 1 });
  server = new EmbeddedTrainerServer(trainer, { apiKey: 'k' });
  trainerUrl = await server.listen(0);
});
afterEach(async () => {
  await Promise.all([vllm.close(), server.close(), env.cleanup()]);
  await trainer.close();
  await rm(dir, { recursive: true, force: true });
});

function resolver(vllmExtra: string) {
  return resolverFromYaml(
    env,
    `
pools: { default: {} }
inference:
  vllm: { type: vllm, replicas: ["${vllm.url}"], servedModel: served-tiny, retryAttempts: 2${vllmExtra} }
trainers:
  tinker:
    type: tinker
    url: ${trainerUrl}
    apiKeyEnv: TINKER_KEY
    capabilities: { kinds: [grpo], losses: [importance_sampling] }
baseModels:
  tiny: { model: ${DEFAULT_BASE_MODEL}, tokenizer: byte }
defaults: { pool: default, inference: vllm, trainer: tinker, baseModel: tiny }
tenants: { default: {} }
tokens: [{ name: t, sha256: "${'c'.repeat(64)}", role: operator, tenant: default }]
`,
    { dir, secrets: { TINKER_KEY: 'k' } },
  );
}

/** The weight-sync instance id in a load request's adapter name. */
function instanceOf(body: unknown): string {
  const name = (body as { lora_name?: unknown } | undefined)?.lora_name;
  const parsed = typeof name === 'string' ? parseVersionedAdapterName(name) : undefined;
  if (parsed === undefined) throw new Error(`not a versioned adapter name: ${String(name)}`);
  return parsed.instance;
}

function grpoSpec(): RunSpec {
  const parsed = parseRunSpec('kind: grpo');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value;
}

describe('vLLM + Tinker trainer weight sync', () => {
  it('loads each sampler export as a new adapter version at its mapped path, under names of its engine alone (no prefix-cache reset)', async () => {
    const root = path.join(dir, 'checkpoints');
    const r = resolver(`, adapters: { root: ${JSON.stringify(root)} }`);
    const runId = 'run_w';
    const resources = await r.resolve({ id: runId, tenant: 'default', spec: grpoSpec() });
    const model = await resources.trainer.createModel({
      baseModel: resources.model.baseModel,
      loraRank: 4,
    });
    const policy = servingNames(runId).policy;
    for (const step of [0, 1]) {
      const served = await syncWeights(
        model,
        resources.inference,
        samplerExportName(runId, step),
        policy,
      );
      expect(served.path).toBe(`tinker://${model.id}/${runId}-sampler-${step}`);
    }
    const routes = vllm.requests.map((q) => q.path);
    expect(routes).toEqual([
      '/v1/load_lora_adapter',
      '/v1/load_lora_adapter',
      '/v1/unload_lora_adapter', // step 0 once step 1 serves (docs/engines.md "Weight sync")
    ]);
    const mapped = (step: number) =>
      path.join(root, model.id, 'sampler_weights', `${runId}-sampler-${step}`);
    const loads = vllm.requestsTo('/v1/load_lora_adapter').map((q) => q.body);
    // Names carry the engine's instance id (never reused by a later worker on this server).
    const instance = instanceOf(loads[0]);
    expect(loads).toEqual([
      { lora_name: versionedAdapterName(policy, instance, 1), lora_path: mapped(0) },
      { lora_name: versionedAdapterName(policy, instance, 2), lora_path: mapped(1) },
    ]);
    // The mapped path is where the trainer really wrote the export.
    expect(existsSync(mapped(0)) && existsSync(mapped(1))).toBe(true);
    const [seq] = await resources.inference.sample({
      prompt: [1, 2],
      n: 1,
      maxTokens: 3,
      temperature: 1,
      topP: 1,
      model: policy,
    });
    expect(seq?.tokens).toHaveLength(3);
    expect(vllm.completedModels).toEqual([versionedAdapterName(policy, instance, 2)]);
    await r.close();
  });

  it("the run's adapters are unloaded when the run ends (what the worker runtime does)", async () => {
    const root = path.join(dir, 'checkpoints');
    const r = resolver(`, adapters: { root: ${JSON.stringify(root)} }`);
    const runId = 'run_e';
    const resources = await r.resolve({ id: runId, tenant: 'default', spec: grpoSpec() });
    const served = trackServedWeights(resources.inference, runId);
    const model = await resources.trainer.createModel({
      baseModel: resources.model.baseModel,
      loraRank: 4,
    });
    const names = servingNames(runId);
    await syncWeights(model, served.engine, `${runId}-reference`, names.reference);
    await syncWeights(model, served.engine, samplerExportName(runId, 0), names.policy);
    const instance = instanceOf(vllm.requestsTo('/v1/load_lora_adapter')[0]?.body);
    const reference = versionedAdapterName(names.reference, instance, 1);
    const policy = versionedAdapterName(names.policy, instance, 1);
    expect([...vllm.adapters.keys()]).toEqual([reference, policy]);
    expect(await served.release()).toEqual([]);
    expect(vllm.requestsTo('/v1/unload_lora_adapter').map((q) => q.body)).toEqual([
      { lora_name: reference },
      { lora_name: policy },
    ]);
    expect(vllm.adapters.size).toBe(0);
    expect(served.names()).toEqual([]);
    await r.close();
  });

  it('without adapter storage the sync fails naming the operator-config field', async () => {
    const r = resolver('');
    const resources = await r.resolve({ id: 'run_x', tenant: 'default', spec: grpoSpec() });
    const model = await resources.trainer.createModel({
      baseModel: resources.model.baseModel,
      loraRank: 4,
    });
    await expect(syncWeights(model, resources.inference, 'run_x-sampler-0', 'p')).rejects.toThrow(
      '`adapters.root`',
    );
    expect(vllm.requestsTo('/v1/load_lora_adapter')).toEqual([]);
    await r.close();
  });
});
