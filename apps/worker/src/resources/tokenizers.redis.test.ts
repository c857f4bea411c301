// A base model with a Hugging Face tokenizer.json resolves to that tokenizer and its tool-call
// markers (hand-written fixture from @anneal/engines/testing; no downloads).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  FIXTURE_TOOL_MARKERS,
  FakeTinkerServer,
  FakeVllmServer,
  fixtureTokenizerJson,
} from '@anneal/engines/testing';
import { createToolCallFormat } from '@anneal/envs';
import { parseOperatorConfig, parseRunSpec } from '@anneal/protocol';
import { noopLogger, createEventBus } from '@anneal/telemetry';
import { defineWorkerConfig } from '../config.ts';
import { RunSetupError } from '../errors.ts';
import { STUB_EMBEDDED } from '../../test/fixtures/engines.ts';
import { type TestEnv, testEnv } from '../../test/helpers.ts';
import { EngineCache } from './engine-cache.ts';
import { defaultEngineFactories } from './factories.ts';
import { ResourceResolver } from './resolve.ts';

let env: TestEnv;
let vllm: FakeVllmServer;
let tinker: FakeTinkerServer;
let dir: string;
let tokenizerPath: string;
beforeEach(async () => {
  env = await testEnv();
  vllm = await FakeVllmServer.start({ servedModel: 'qwen-base' });
  tinker = await FakeTinkerServer.start({});
  dir = await mkdtemp(path.join(tmpdir(), 'anneal-hf-tok-'));
  tokenizerPath = path.join(dir, 'tokenizer.json');
  await writeFile(tokenizerPath, JSON.stringify(fixtureTokenizerJson()));
});
afterEach(async () => {
  await Promise.all([vllm.close(), tinker.close(), env.cleanup()]);
  await rm(dir, { recursive: true, force: true });
});

const { eos: _eos, ...toolFormat } = FIXTURE_TOOL_MARKERS;

function resolver(tokenizer: string, format: object = toolFormat) {
  const parsed = parseOperatorConfig(`
pools: { default: {} }
inference: { main: { type: vllm, replicas: ["${vllm.url}"] } }
trainers:
  tinker:
    type: tinker
    url: ${tinker.url}
    capabilities: { kinds: [sft, grpo, eval], losses: [cross_entropy, importance_sampling] }
baseModels:
  qwen: { model: qwen-base, tokenizer: ${tokenizer}, toolFormat: ${JSON.stringify(format)} }
defaults: { pool: default, inference: main, trainer: tinker, baseModel: qwen }
tenants: { default: {} }
tokens: [{ name: t, sha256: "${'c'.repeat(64)}", role: operator, tenant: default }]
`);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  const spec = parseRunSpec('kind: grpo');
  if (!spec.ok) throw new Error(JSON.stringify(spec.errors));
  const r = new ResourceResolver({
    store: env.store,
    config: defineWorkerConfig({ operatorConfig: parsed.value, artifactDir: dir, secrets: {} }),
    factories: defaultEngineFactories(STUB_EMBEDDED),
    cache: new EngineCache(),
    telemetry: createEventBus(),
    logger: noopLogger,
  });
  const run = { id: 'run_hf', tenant: 'default', spec: spec.value };
  return () => r.resolve(run);
}

const hf = (eos = '<|endoftext|>') =>
  `{ type: hf, path: ${JSON.stringify(tokenizerPath)}, eosToken: "${eos}" }`;

describe('base model with a Hugging Face tokenizer', () => {
  it('resolves the tokenizer.json, its eos and the tool-call markers, loading the file once', async () => {
    const resolve = resolver(hf());
    const resources = await resolve();
    expect(resources.model.tokenizer).toBe(tokenizerPath);
    expect(resources.tokenizer.eosTokenId).toBe(300);
    expect(resources.tokenizer.encode(' the')).toEqual([258]);
    expect(resources.toolMarkers).toEqual({ ...toolFormat, eos: '<|endoftext|>' });
    const format = createToolCallFormat(resources.tokenizer, resources.toolMarkers);
    expect(format.encodePrompt('hello')).toEqual([301, 261, 111, 302]);
    expect(format.stopTokenIds).toEqual([304, 300]);
    expect(format.encodeResult('the')).toEqual([305, 116, 257, 306]);

    await writeFile(tokenizerPath, 'not json any more');
    expect((await resolve()).tokenizer).toBe(resources.tokenizer);
  });

  it('names the marker that is not a single added token', async () => {
    const resolve = resolver(hf(), { ...toolFormat, callStart: '<function>' });
    await expect(resolve()).rejects.toThrow(RunSetupError);
    await expect(resolve()).rejects.toThrow(
      /baseModels\.qwen\.toolFormat\.callStart: '<function>' is not a single added token/,
    );
  });

  it('refuses a marker that repeats another marker or the eos token', async () => {
    await expect(resolver(hf(), { ...toolFormat, answer: '<|im_start|>' })()).rejects.toThrow(
      /toolFormat\.answer: '<\|im_start\|>' is already toolFormat\.user/,
    );
    await expect(resolver(hf('<|im_end|>'))()).rejects.toThrow(
      /toolFormat\.assistant: '<\|im_end\|>' is already the eos token/,
    );
  });

  it('names the base model when the tokenizer file is unusable', async () => {
    await writeFile(
      tokenizerPath,
      JSON.stringify(fixtureTokenizerJson({ model: { type: 'WordPiece' } })),
    );
    await expect(resolver(hf())()).rejects.toThrow(
      /baseModels\.qwen\.tokenizer: .*model\.type: 'WordPiece' is not supported/,
    );
    await writeFile(tokenizerPath, JSON.stringify(fixtureTokenizerJson()));
    await expect(resolver(hf('<|eot_id|>'))()).rejects.toThrow(
      /baseModels\.qwen\.tokenizer: .*eosToken '<\|eot_id\|>' is not a token/,
    );
  });
});
