// Multi-turn rollout results: exact token ids, per-token sampling logprobs and the loss mask.
import type { ToolCallRecord } from '../search/searchWeb.ts';

export interface RolloutConfig {
  /** Longest whole sequence (prompt + generated + tool output); the model's context. */
  maxContextTokens: number;
  /** Most tokens after the prompt (generated + tool output), e.g. 8192 (docs/recipe.md §6). */
  maxResponseTokens: number;
  temperature: number;
  topP: number;
  /** Weights to sample from (a name from `InferenceEngine.loadWeights`); default = base. */
  model?: string;
  /** Tokens kept free for generation after a tool output; the output is clipped to leave them
   * (default 8). */
  minGenerationTokens?: number;
  /** false: sampled without the sampling logprobs (rollouts never trained on, e.g. the frozen
   * reference's): the engine may leave them out of its replies, and `Rollout.logprobs` is null.
   * Default true. */
  logprobs?: boolean;
}

export type RolloutFinish =
  /** `<|answer|>…<|eos|>` */
  | 'answer'
  /** `<|eos|>` without an answer marker */
  | 'no_answer'
  /** token budget (context or response) ran out */
  | 'length'
  /** the engine reported the context was exceeded */
  | 'context_overflow';

export interface Rollout {
  /** Prompt + everything after it, exact ids. */
  tokens: Int32Array;
  promptLength: number;
  /** 1 for model-generated tokens, 0 for prompt and tool-output tokens. Same length as tokens. */
  lossMask: Uint8Array;
  /** Sampling logprob (μ_infer) of each generated token, float32 as the sampler computed it; 0
   * where lossMask is 0. null when sampled with `RolloutConfig.logprobs` false. */
  logprobs: Float32Array | null;
  /** Model-generated tokens (Σ lossMask). */
  generatedTokens: number;
  /** c_i: tool calls the model emitted (including failed and refused). */
  toolCalls: number;
  /** e_i: failed tool calls. */
  toolErrors: number;
  refusedCalls: number;
  calls: ToolCallRecord[];
  /** Final answer text, or null when the model did not produce `<|answer|>…<|eos|>`. */
  answer: string | null;
  finish: RolloutFinish;
  /** Stopped by a budget (context or max tokens) rather than by the model. */
  truncated: boolean;
  /** Each non-empty sampled segment as the loop read it, in order (one per run of the loss
   * mask): kept so that the rollout ledger need not decode the ids again. Absent on rollouts
   * built elsewhere (tests, restored data); readers then decode. */
  sampledTurns?: SampledTurn[];
}

/** One sampled segment as the rollout loop read it. */
export interface SampledTurn {
  /** `tokenizer.decode` of the segment's ids as sampled (its stop token included). */
  text: string;
  /** Tool calls the chat format parsed from it (malformed ones included). */
  toolCalls: number;
}

/** One prompt, `n` rollouts (a GRPO group). */
export interface RolloutRequest {
  prompt: readonly number[];
  n: number;
  /** Base seed; rollout k's first segment uses seed + k. */
  seed?: number;
}
