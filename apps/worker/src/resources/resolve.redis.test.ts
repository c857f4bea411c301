import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeTinkerServer, FakeVllmServer } from '@anneal/engines/testing';
import {
  type OperatorConfig,
  type RunSpec,
  parseOperatorConfig,
  parseRunSpec,
} from '@anneal/protocol';
import { createRun, readFairShare, transitionRun } from '@anneal/store';
import { type TelemetryEventName, createEventBus, noopLogger } from '@anneal/telemetry';
import { defineWorkerConfig } from '../config.ts';
import { RunSetupError } from '../errors.ts';
import { STUB_EMBEDDED } from '../../test/fixtures/engines.ts';
import { type TestEnv, testEnv } from '../../test/helpers.ts';
import { EngineCache } from './engine-cache.ts';
import { defaultEngineFactories } from './factories.ts';
import type { RewardModelSource } from './reward-model-source.ts';
import { ResourceResolver } from './resolve.ts';

let env: TestEnv;
let vllm: FakeVllmServer;
let tinker: FakeTinkerServer;
let dir: string;
beforeEach(async () => {
  env = await testEnv();
  vllm = await FakeVllmServer.start({ apiKey: 'secret-v', servedModel: 'base-model' });
  tinker = await FakeTinkerServer.start({ apiKey: 'secret-t' });
  dir = await mkdtemp(path.join(tmpdir(), 'anneal-resolve-'));
});
afterEach(async () => {
  await Promise.all([vllm.close(), tinker.close(), env.cleanup()]);
  await rm(dir, { recursive: true, force: true });
});

function operatorConfig(
  extra = '',
  trainerKinds = 'sft, grpo, eval',
  vllmExtra = '',
): OperatorConfig {
  const parsed = parseOperatorConfig(`
pools: { default: {} }
inference:
  main: { type: vllm, replicas: ["${vllm.url}"], apiKeyEnv: VLLM_KEY${vllmExtra} }
  local: { type: embedded }
trainers:
  tinker:
    type: tinker
    url: ${tinker.url}
    apiKeyEnv: TINKER_KEY
    capabilities: { kinds: [${trainerKinds}], losses: [cross_entropy, importance_sampling] }
search:
  web: { type: searxng, url: "http://searxng:8080" }
  corpus: { type: local, corpus: ${JSON.stringify(path.join(dir, 'corpus.jsonl'))} }
baseModels:
  base: { model: base-model, tokenizer: byte }
defaults: { pool: default, inference: main, trainer: tinker, search: web, baseModel: base }
tenants: { default: {} }
tokens: [{ name: t, sha256: "${'b'.repeat(64)}", role: operator, tenant: default }]
${extra}`);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value;
}

function spec(yaml: string): RunSpec {
  const parsed = parseRunSpec(yaml);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value;
}

function resolver(config: OperatorConfig, rewardSources: RewardModelSource[] = []) {
  const events: TelemetryEventName[] = [];
  const bus = createEventBus();
  bus.onAny((name) => events.push(name));
  const factories = {
    ...defaultEngineFactories(STUB_EMBEDDED),
    rewardModel: async (source: RewardModelSource) => {
      rewardSources.push(source);
      return { score: async () => new Float32Array(), close: async () => undefined };
    },
  };
  const workerConfig = defineWorkerConfig({
    operatorConfig: config,
    artifactDir: dir,
    secrets: { VLLM_KEY: 'secret-v', TINKER_KEY: 'secret-t' },
  });
  const r = new ResourceResolver({
    store: env.store,
    config: workerConfig,
    factories,
    cache: new EngineCache(),
    telemetry: bus,
    logger: noopLogger,
  });
  return { r, events };
}

/** A finished run in the store, as a worker would leave it. */
async function finishedRun(yaml: string, fields: Record<string, string>, state = 'succeeded') {
  const created = await createRun(env.store, {
    tenant: 'default',
    spec: { ...spec(yaml), pool: 'default' },
  });
  if (created.status !== 'created') throw new Error(created.status);
  const id = created.run.id;
  await transitionRun(env.store, id, { to: 'running', reason: 'test' });
  if (state !== 'running') {
    await transitionRun(env.store, id, { to: state as 'succeeded', reason: 'test', fields });
  }
  return id;
}

const ref = (runId: string, tenant = 'default') => ({
  id: 'run_x',
  tenant,
  spec: spec(`kind: grpo\nmodel: { checkpoint: { run: ${runId} } }`),
});

describe('resource resolution', () => {
  it('vLLM and Tinker endpoints become the HTTP clients, keyed by secrets, cached per endpoint', async () => {
    await writeFile(path.join(dir, 'corpus.jsonl'), '{"id":"1","title":"t","text":"x"}\n');
    const { r, events } = resolver(operatorConfig());
    const run = { id: 'run_a', tenant: 'default', spec: spec('kind: grpo') };
    const resources = await r.resolve(run);
    const samples = await resources.inference.sample({
      prompt: [1, 2, 3],
      n: 2,
      maxTokens: 4,
      temperature: 1,
      topP: 1,
    });
    expect(samples).toHaveLength(2);
    expect(samples[0]?.tokens.length).toBe(samples[0]?.logprobs?.length);
    expect(vllm.requests.some((q) => q.headers.authorization === 'Bearer secret-v')).toBe(true);
    expect(tinker.sessions.size).toBe(1); // connected with X-API-Key (the fake rejects others)
    expect(resources.trainer.capabilities.kinds).toEqual(['sft', 'grpo', 'eval']);
    expect(resources.search?.name).toBe('web');
    expect(resources.model).toEqual({
      label: 'base',
      baseModel: 'base-model',
      tokenizer: 'byte',
      checkpoint: null,
    });
    expect(resources.tokenizer.decode(resources.tokenizer.encode('hi'))).toBe('hi');
    expect(events).toEqual(expect.arrayContaining(['request:started', 'request:finished']));

    const again = await r.resolve({
      ...run,
      spec: spec('kind: grpo\nendpoints: { search: corpus }'),
    });
    expect(again.inference).toBe(resources.inference);
    expect(again.trainer).toBe(resources.trainer);
    expect(again.search?.name).toBe('corpus');
    expect(tinker.sessions.size).toBe(1);
    expect(await r.close()).toEqual([]);
  });

  it("a vLLM endpoint with maxNumSeqs: the run's requests go through its fair share, with its priority", async () => {
    const config = operatorConfig('', undefined, ', schedulingPolicy: priority, maxNumSeqs: 4');
    const { r, events } = resolver(config);
    const run = { id: 'run_a', tenant: 'default', spec: spec('kind: grpo\npriority: 80') };
    const resources = await r.resolve(run);
    await resources.inference.sample({
      prompt: [1, 2],
      n: 2,
      maxTokens: 3,
      temperature: 1,
      topP: 1,
    });
    // docs/operations.md "Fair share of an endpoint": Anneal priority 80 is vLLM priority -30.
    expect(vllm.requestsTo('/v1/completions')[0]?.body).toMatchObject({ priority: -30 });
    expect(events).toContain('fleet:served');
    const [share] = await readFairShare(env.store, 'main');
    expect(share).toMatchObject({ runId: 'run_a', weight: 1, held: 0, requests: 1, units: 2 });
    expect(share?.tokens).toBe(6);
    expect(await r.close()).toEqual([]);
  });

  it('kinds without an endpoint get a stand-in that names what is missing', async () => {
    const { r } = resolver(operatorConfig());
    const resources = await r.resolve({ id: 'run_a', tenant: 'default', spec: spec('kind: sft') });
    await expect(
      resources.inference.sample({ prompt: [1], n: 1, maxTokens: 1, temperature: 1, topP: 1 }),
    ).rejects.toThrow(/this sft run has no inference endpoint/);
    // eval names engines with the control plane's defaulting (defaultedEndpoints): the default
    // trainer only when it declares eval, else the stand-in.
    const { r: noEvalTrainer } = resolver(operatorConfig('', 'sft, grpo'));
    const local = await noEvalTrainer.resolve({
      id: 'run_b',
      tenant: 'default',
      spec: spec('kind: eval\nendpoints: { inference: local }'),
    });
    expect(
      (await local.inference.sample({ prompt: [1], n: 3, maxTokens: 1, temperature: 1, topP: 1 }))
        .length,
    ).toBe(3);
    await expect(local.trainer.createModel({ baseModel: 'x', loraRank: 1 })).rejects.toThrow(
      /no trainer endpoint/,
    );
    const withTrainer = await r.resolve({
      id: 'run_c',
      tenant: 'default',
      spec: spec('kind: eval\nendpoints: { inference: local }'),
    });
    await expect(
      withTrainer.trainer.createModel({ baseModel: 'base-model', loraRank: 1 }),
    ).resolves.toMatchObject({ id: expect.any(String) });
  });

  it("model: {checkpoint: {run}} resolves to that run's final checkpoint on its base model", async () => {
    const { r } = resolver(operatorConfig());
    const sft = await finishedRun('kind: sft', {
      finalCheckpoint: '/ckpt/sft-state',
      summary: JSON.stringify({ samplerWeightsPath: '/ckpt/sft-sampler' }),
    });
    expect((await r.resolve(ref(sft))).model).toEqual({
      label: sft,
      baseModel: 'base-model',
      tokenizer: 'byte',
      checkpoint: '/ckpt/sft-state',
      samplerPath: '/ckpt/sft-sampler',
    });
    const grpo = await finishedRun(`kind: grpo\nmodel: { checkpoint: { run: ${sft} } }`, {
      finalCheckpoint: '/ckpt/grpo',
    });
    const chained = await r.resolve(ref(grpo));
    expect(chained.model).toMatchObject({
      label: grpo,
      baseModel: 'base-model',
      checkpoint: '/ckpt/grpo',
    });

    const running = await finishedRun('kind: sft', {}, 'running');
    await expect(r.resolve(ref(running))).rejects.toThrow(
      /\/model\/checkpoint\/run: run .* is running/,
    );
    await expect(r.resolve(ref(sft, 'other-tenant'))).rejects.toThrow(/no run .* in this tenant/);
    await expect(r.resolve(ref(sft))).resolves.toBeDefined();
  });

  it("reward models: an ONNX path or an rm run's final checkpoint", async () => {
    const rm = await finishedRun('kind: rm', { finalCheckpoint: '/ckpt/rm.onnx' });
    const sources: RewardModelSource[] = [];
    const config = operatorConfig(
      `rewardModels:\n  pref: { type: run, run: ${rm} }\n  file: { type: onnx, path: /models/rm.onnx }`,
    );
    const { r } = resolver(config, sources);
    const resources = await r.resolve({
      id: 'run_a',
      tenant: 'default',
      spec: spec('kind: grpo\nendpoints: { rewardModel: pref }'),
    });
    expect(resources.rewardScorer).toBeDefined();
    await r.resolve({
      id: 'run_b',
      tenant: 'default',
      spec: spec('kind: grpo\nendpoints: { rewardModel: file }'),
    });
    expect(sources).toEqual([
      { name: 'pref', path: '/ckpt/rm.onnx', executionProvider: 'cpu', fromRun: rm },
      { name: 'file', path: '/models/rm.onnx', executionProvider: 'cpu' },
    ]);
  });

  it('set-up errors name the field: unknown endpoint, trainer capability, bad corpus line', async () => {
    const { r } = resolver(operatorConfig());
    const run = (yaml: string) => r.resolve({ id: 'run_a', tenant: 'default', spec: spec(yaml) });
    await expect(run('kind: sft\nendpoints: { trainer: nope }')).rejects.toThrow(
      /\/endpoints\/trainer: unknown trainers endpoint 'nope' \(declared: tinker\)/,
    );
    await expect(run('kind: rm')).rejects.toThrow(RunSetupError);
    await expect(run('kind: rm')).rejects.toThrow(/trainer endpoint 'tinker' cannot run kind 'rm'/);
    await expect(run('kind: sft\nmodel: { base: gpt }')).rejects.toThrow(
      /unknown base model 'gpt'/,
    );
    await writeFile(
      path.join(dir, 'corpus.jsonl'),
      '{"id":"1","title":"t","text":"x"}\n{"id":2}\n',
    );
    await expect(run('kind: grpo\nendpoints: { search: corpus }')).rejects.toThrow(
      /corpus.*line 2: id, title, text/,
    );
  });

  it('registered datasets join the catalogue; judge and eval models resolve; bad rows name the line', async () => {
    const qa = path.join(dir, 'qa.jsonl');
    const chat = path.join(dir, 'chat.jsonl');
    await writeFile(qa, '{"question":"Capital of France?","answer":"Paris"}\n');
    await writeFile(chat, '{"prompt":"Greet me","rubrics":[{"text":"is polite"}]}\n');
    const config = operatorConfig(
      `datasets:\n  my-qa: { kind: qa, path: ${JSON.stringify(qa)} }\n` +
        `  my-chat: { kind: rubric, path: ${JSON.stringify(chat)} }\n` +
        `judges:\n  gpt: { url: "http://judge:8000", model: judge-1 }`,
    );
    const { r } = resolver(config);
    const run = (yaml: string) => r.resolve({ id: 'run_a', tenant: 'default', spec: spec(yaml) });
    const grpo = await run(
      'kind: grpo\ndata: { mix: [{ source: my-qa, weight: 1 }, { source: search-qa, weight: 1 }] }\nendpoints: { judge: gpt }',
    );
    expect(grpo.data?.prompts('my-qa')).toEqual([
      { kind: 'qa', id: 'my-qa:1', prompt: 'Capital of France?', key: { answer: 'Paris' } },
    ]);
    expect(grpo.data?.prompts('search-qa').length).toBeGreaterThan(0);
    expect(grpo.judge?.name).toBe('gpt');
    expect((await run('kind: grpo')).data).toBeUndefined();

    const evalRun = await run(
      'kind: eval\ndatasets: [my-qa]\nmodels: [{ base: base }, { base: base }]',
    );
    expect(evalRun.evalModels?.map((m) => m.baseModel)).toEqual(['base-model', 'base-model']);
    expect(evalRun.data?.evalSet('my-qa')[0]?.key).toEqual({ answer: 'Paris' });
    await expect(run('kind: eval\nmodels: [{ base: base }, { base: gpt }]')).rejects.toThrow(
      /\/models\/1\/base: unknown base model 'gpt'/,
    );

    await writeFile(qa, '{"question":"q","answer":"a"}\n{"question":"q2"}\n');
    const { r: fresh } = resolver(config);
    await expect(
      fresh.resolve({
        id: 'run_b',
        tenant: 'default',
        spec: spec('kind: eval\ndatasets: [my-qa]'),
      }),
    ).rejects.toThrow(
      new RunSetupError(`/datasets/my-qa (${qa}): line 2: answer: is required (non-empty string)`),
    );
  });
});
