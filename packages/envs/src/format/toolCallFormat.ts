// The tool-call format of rollouts, as token ids (README "Tool-call format"):
//   <|user|>{question}<|assistant|>  <|call|>{query}<|/call|>  <|result|>{results}<|/result|>  …  <|answer|>{answer}<|eos|>
// Only the prompt and tool outputs are ever encoded; model output stays as sampled token ids.
// The format of the embedded byte model; as a ChatFormat it makes one call per turn (generation
// stops at <|/call|>).
import type { Tokenizer } from '@anneal/engines';
import { parseSegment, type SegmentAction } from '../rollout/parse.ts';
import type { ChatFormat, TurnAction } from './chatFormat.ts';

/** Marker strings of the format; a production tokenizer may use its own special tokens. */
export interface ToolCallMarkers {
  user: string;
  assistant: string;
  callStart: string;
  callEnd: string;
  resultStart: string;
  resultEnd: string;
  answer: string;
  /** Text form of the tokenizer's end-of-sequence token. */
  eos: string;
}

export const DEFAULT_MARKERS: Readonly<ToolCallMarkers> = Object.freeze({
  user: '<|user|>',
  assistant: '<|assistant|>',
  callStart: '<|call|>',
  callEnd: '<|/call|>',
  resultStart: '<|result|>',
  resultEnd: '<|/result|>',
  answer: '<|answer|>',
  eos: '<|eos|>',
});

/** Token ids of the markers (all single special tokens of the tokenizer). */
export interface MarkerIds {
  user: number;
  assistant: number;
  callStart: number;
  callEnd: number;
  resultStart: number;
  resultEnd: number;
  answer: number;
  eos: number;
}

export interface ToolCallFormat extends ChatFormat {
  readonly kind: 'markers';
  readonly tokenizer: Tokenizer;
  readonly markers: Readonly<ToolCallMarkers>;
  readonly ids: Readonly<MarkerIds>;
  /** Generation stops at the end of a call or at end of sequence. */
  readonly stopTokenIds: readonly number[];
  /** `<|user|>{question}<|assistant|>` (marker strings inside the question are removed). */
  encodePrompt(question: string): number[];
  /** `<|result|>{text}<|/result|>`; marker strings in `text` are removed; `maxTokens` clips
   * the text so the whole block (markers included) fits. */
  encodeResult(text: string, maxTokens?: number): number[];
  /** Text of an assistant turn in this format (for datasets and demos, never for rollouts). */
  callText(query: string): string;
  resultText(results: string): string;
  /** `<|answer|>{answer}<|eos|>` */
  answerText(answer: string): string;
}

export class FormatError extends Error {
  override readonly name = 'FormatError';
}

/** Build the format over any tokenizer that has the markers as single special tokens. */
export function createToolCallFormat(
  tokenizer: Tokenizer,
  markers: ToolCallMarkers = DEFAULT_MARKERS,
): ToolCallFormat {
  const idOf = (key: Exclude<keyof ToolCallMarkers, 'eos'>): number => {
    const id = tokenizer.specialTokenId(markers[key]);
    if (id === undefined) {
      throw new FormatError(`tokenizer has no special token for ${key} marker '${markers[key]}'`);
    }
    return id;
  };
  const ids: MarkerIds = {
    user: idOf('user'),
    assistant: idOf('assistant'),
    callStart: idOf('callStart'),
    callEnd: idOf('callEnd'),
    resultStart: idOf('resultStart'),
    resultEnd: idOf('resultEnd'),
    answer: idOf('answer'),
    eos: tokenizer.eosTokenId,
  };
  // Text from outside (prompts, web pages) must not smuggle in structural special tokens.
  const markerStrings = Object.values(markers).filter((m) => m.length > 0);
  const strip = (text: string): string =>
    markerStrings.reduce((acc, marker) => acc.split(marker).join(''), text);
  const encodeResult = (text: string, maxTokens?: number): number[] => {
    let body = tokenizer.encode(strip(text));
    if (maxTokens !== undefined) body = body.slice(0, Math.max(0, maxTokens - 2));
    return [ids.resultStart, ...body, ids.resultEnd];
  };
  const format: ToolCallFormat = {
    kind: 'markers',
    tokenizer,
    markers,
    ids,
    stopTokenIds: [ids.callEnd, ids.eos],
    encodePrompt: (question) => [ids.user, ...tokenizer.encode(strip(question)), ids.assistant],
    encodeResult,
    parseTurn: (tokens) => turnOf(parseSegment(tokens, format)),
    encodeToolResults(outputs, maxTokens) {
      // One block per output, each with an equal share of the room (the loop sends one).
      const share =
        maxTokens === undefined ? undefined : Math.floor(maxTokens / Math.max(1, outputs.length));
      if (share !== undefined && share < 2) return undefined;
      return outputs.flatMap((output) => encodeResult(output, share));
    },
    callText: (query) => `${markers.callStart}${query}${markers.callEnd}`,
    resultText: (results) => `${markers.resultStart}${results}${markers.resultEnd}`,
    answerText: (answer) => `${markers.answer}${answer}${markers.eos}`,
  };
  return format;
}

function turnOf(action: SegmentAction): TurnAction {
  switch (action.kind) {
    case 'call':
      return { kind: 'tool_calls', calls: [{ ok: true, query: action.query }] };
    case 'malformed_call':
      return { kind: 'tool_calls', calls: [{ ok: false, detail: action.detail }] };
    default:
      return action;
  }
}
