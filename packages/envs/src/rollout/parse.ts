// Reads one generated segment (token ids, as sampled) as an action of the marker tool-call format
// (the embedded byte model's; `ToolCallFormat.parseTurn` wraps it as a ChatFormat TurnAction —
// template formats read Hermes <tool_call> JSON instead, chat-template/toolCalls.ts).
// Decoding model output to text is fine for parsing; it is never re-encoded.
import type { TokenIds } from '@anneal/engines';

/** What parsing needs of a marker format (format/toolCallFormat.ts ToolCallFormat has it). */
export interface SegmentFormat {
  ids: {
    readonly callStart: number;
    readonly callEnd: number;
    readonly answer: number;
    readonly eos: number;
    readonly [marker: string]: number;
  };
  tokenizer: { decode(tokens: TokenIds): string };
}

export type SegmentAction =
  | { kind: 'call'; query: string }
  | { kind: 'malformed_call'; detail: string }
  | { kind: 'answer'; answer: string }
  /** Ended with <|eos|> but without an <|answer|> marker. */
  | { kind: 'no_answer' }
  /** Ended without a stop token (token budget or engine limit). */
  | { kind: 'incomplete' };

function lastIndexOf(tokens: TokenIds, id: number, before: number): number {
  for (let i = before - 1; i >= 0; i--) if (tokens[i] === id) return i;
  return -1;
}

/** Parse a segment that the engine stopped at <|/call|>, <|eos|>, or a budget. */
export function parseSegment(tokens: TokenIds, format: SegmentFormat): SegmentAction {
  const { ids, tokenizer } = format;
  const last = tokens.length - 1;
  const lastToken = tokens[last];
  const structural = new Set(Object.values(ids));
  if (lastToken === ids.callEnd) {
    const start = lastIndexOf(tokens, ids.callStart, last);
    if (start < 0) return { kind: 'malformed_call', detail: 'call end without call start' };
    const body = tokens.slice(start + 1, last);
    if (body.some((t) => structural.has(t))) {
      return { kind: 'malformed_call', detail: 'special token inside the query' };
    }
    return { kind: 'call', query: tokenizer.decode(body) };
  }
  if (lastToken === ids.eos) {
    const start = lastIndexOf(tokens, ids.answer, last);
    if (start < 0) return { kind: 'no_answer' };
    const body = tokens.slice(start + 1, last).filter((t) => !structural.has(t));
    return { kind: 'answer', answer: tokenizer.decode(body).trim() };
  }
  return { kind: 'incomplete' };
}
