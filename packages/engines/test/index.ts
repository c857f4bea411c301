// Test doubles for other workspaces' tests (`@anneal/engines/testing`): in-repo vLLM and
// Tinker-compatible servers over real HTTP. Outside src/, so never built into dist/ nor shipped in
// an image; the package exports it only under the "@anneal/source" condition (tests, tsx).
export { FakeVllmServer } from './vllm/fake-server.ts';
export { completionResponseJson, fakeLogprob } from './vllm/fixtures.ts';
export type { FakeVllmOptions, ScriptedReply as VllmScriptedReply } from './vllm/fake-server.ts';
export { completionResponse } from './vllm/fixtures.ts';
export type { FixtureChoice, VllmGeneration } from './vllm/fixtures.ts';
export { FakeLogprobsServer } from './fake-logprobs-server.ts';
export type { FakeLogprobsServerOptions } from './fake-logprobs-server.ts';
export { FakeTinkerServer } from './tinker/fake-server.ts';
export type { FakeFlavor as FakeTinkerFlavor, TokenLatency } from './tinker/fake-server.ts';
export type {
  AppliedGradient,
  FakeBackend as FakeTinkerBackend,
  FakeTinkerOptions,
  ScriptedReply as TinkerScriptedReply,
  SlotOverwrite,
} from './tinker/fake-server.ts';
export { fakeLogprob as fakeTinkerLogprob } from './tinker/losses.ts';
export {
  FIXTURE_TOOL_MARKERS,
  QWEN2_SPLIT_REGEX,
  fixtureTokenizerJson,
} from './tokenizers/fixture.ts';
export {
  QWEN3_TOKENIZER_CONFIG,
  QWEN3_TOKENIZER_JSON,
  qwen3Reference,
} from './tokenizers/qwen3.ts';
// The vLLM client's reply reader, for bench/overhead's thread-scaling measure.
export { extractCompletion } from '../src/vllm/fast-parse.ts';
// The Tinker request writer, for bench/overhead's float32 writer measure.
export { JsonBytesWriter } from '../src/http/json-text.ts';
