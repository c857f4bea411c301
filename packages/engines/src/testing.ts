// Test doubles for other workspaces' tests (`@anneal/engines/testing`): in-repo vLLM and
// Tinker-compatible servers over real HTTP that answer with the documented shapes.
export { FakeVllmServer } from './vllm/testing/fake-server.ts';
export type {
  FakeVllmOptions,
  ScriptedReply as VllmScriptedReply,
} from './vllm/testing/fake-server.ts';
export { completionResponse } from './vllm/testing/fixtures.ts';
export type { FixtureChoice, VllmGeneration } from './vllm/testing/fixtures.ts';
export { FakeLogprobsServer } from './testing/fake-logprobs-server.ts';
export type { FakeLogprobsServerOptions } from './testing/fake-logprobs-server.ts';
export { FakeTinkerServer } from './tinker/testing/fake-server.ts';
export type { FakeFlavor as FakeTinkerFlavor } from './tinker/testing/fake-server.ts';
export type {
  AppliedGradient,
  FakeBackend as FakeTinkerBackend,
  FakeTinkerOptions,
  ScriptedReply as TinkerScriptedReply,
  SlotOverwrite,
} from './tinker/testing/fake-server.ts';
export { fakeLogprob as fakeTinkerLogprob } from './tinker/testing/losses.ts';
export {
  FIXTURE_TOOL_MARKERS,
  QWEN2_SPLIT_REGEX,
  fixtureTokenizerJson,
} from './tokenizers/testing/fixture.ts';
export {
  QWEN3_TOKENIZER_CONFIG,
  QWEN3_TOKENIZER_JSON,
  qwen3Reference,
} from './tokenizers/testing/qwen3.ts';
