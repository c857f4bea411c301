// What the rollout loop needs from a chat format, whatever the model's conversation syntax:
// the prompt ids, the stop ids, how to read a sampled assistant turn, and the ids to append
// after a turn that called tools. Two implementations: the marker format of the embedded byte
// model (format/toolCallFormat.ts) and a model's own chat template (chat-template/).
// Token-in/token-out: the loop keeps sampled ids as sampled; a format only encodes text that
// comes from outside the model (the question, tool outputs, the template's turn headers).
import type { TokenIds, Tokenizer } from '@anneal/engines';

/** One tool call read from a sampled turn: a query to run, or why it cannot run. */
export type ParsedToolCall = { ok: true; query: string } | { ok: false; detail: string };

export type TurnAction =
  /** The turn called tools (≥ 1; malformed calls are counted tool errors, docs/recipe.md §4). */
  | { kind: 'tool_calls'; calls: ParsedToolCall[] }
  | { kind: 'answer'; answer: string }
  /** Ended with a stop token but gave no answer. */
  | { kind: 'no_answer' }
  /** Ended without a stop token (token budget or engine limit). */
  | { kind: 'incomplete' };

export interface ChatFormat {
  readonly kind: 'markers' | 'template';
  readonly tokenizer: Tokenizer;
  /** Generation stops at any of these (the format's end-of-turn / end-of-call ids). */
  readonly stopTokenIds: readonly number[];
  /** The prompt of a question, ending where the model's answer starts. */
  encodePrompt(question: string): number[];
  /** Read one sampled segment (ids as sampled, stop token last when it stopped). `decoded`:
   * `tokenizer.decode(tokens)` when the caller already has it (the rollout loop keeps it for
   * the ledger), so that a format reading text need not decode again. */
  parseTurn(tokens: TokenIds, decoded?: string): TurnAction;
  /**
   * Ids appended after a turn that called tools: its tool outputs in call order, then whatever
   * leads into the next assistant turn. Outputs are clipped so the whole block fits `maxTokens`;
   * undefined when not even empty outputs fit.
   */
  encodeToolResults(outputs: readonly string[], maxTokens?: number): number[] | undefined;
  /** The same format with `text` as its system message (after a configured one, a blank line
   * between), rendered by the chat template; absent where there is no system role (the
   * marker format). */
  withSystemPrompt?(text: string): ChatFormat;
}
