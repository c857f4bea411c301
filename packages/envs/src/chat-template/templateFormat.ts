// A ChatFormat driven by the model's own chat template (tokenizer_config.json `chat_template`),
// so real base models (Qwen3) roll out in the conversation syntax they were trained on:
//   prompt   = template(system?, user, tools=[search_web], add_generation_prompt)
//   turn     = sampled ids up to the template's end-of-turn token (kept as sampled)
//   calls    = Hermes <tool_call>{"name", "arguments"}</tool_call> in the turn's text
//   results  = exactly what the template renders after that turn for `tool` messages, up to and
//              including the next assistant header (the "delta"), encoded and masked.
// The delta is rendered on a stand-in conversation (same system prompt and tools) and cut after
// the stand-in assistant turn's end-of-turn token. Qwen3's template renders a tool message from
// its neighbours' roles only, so the delta equals the suffix of rendering the real conversation;
// the golden tests check that on the real Qwen3 files.
import type {
  ChatMessage,
  ChatTemplate,
  ChatToolSpec,
  TemplateArgs,
  Tokenizer,
} from '@anneal/engines';
import type { ChatFormat, TurnAction } from '../format/chatFormat.ts';
import { FormatError } from '../format/toolCallFormat.ts';
import { splitReasoningAsServed, toolCallsAsServed } from './servingParse.ts';
import { SEARCH_WEB, parseToolCalls, searchWebToolSpec } from './toolCalls.ts';

export interface TemplateFormatOptions {
  tokenizer: Tokenizer;
  template: ChatTemplate;
  /** Strings removed from outside text (question, system prompt, tool outputs) so it cannot
   * open or close turns: by default the tokenizer's added tokens when it lists them. */
  reserved?: readonly string[];
  systemPrompt?: string;
  /** Template variables, e.g. Qwen3's `{enable_thinking: false}`. */
  templateArgs?: TemplateArgs;
  /** The end-of-turn token's text (one added token); default: read from the template. */
  endOfTurn?: string;
  tools?: readonly ChatToolSpec[];
  /** Reasoning tags (default Qwen3's `<think>`/`</think>`). */
  thinking?: { open: string; close: string };
  /**
   * How a sampled turn is read (docs/engines.md "Reading a turn as the server does"):
   * `serving` (default) — as vLLM's `qwen3` reasoning parser and `hermes` tool parser deliver it
   * (servingParse.ts): reasoning ends at the first `</think>`, a turn with any malformed
   * `<tool_call>` body delivers no call and answers with its content, string `arguments` fail;
   * `lenient` — reasoning ends at the last `</think>`, each `<tool_call>` is its own call
   * (malformed ones are failed calls), string `arguments` holding JSON are decoded.
   */
  turnParser?: TurnParser;
  /** More stop ids, e.g. the model's generation_config.json `eos_token_id` list, which vLLM adds
   * to every request's stop set (`readModelStopIds` of @anneal/engines). */
  extraStopTokenIds?: readonly number[];
}

export type TurnParser = 'serving' | 'lenient';

export interface TemplateChatFormat extends ChatFormat {
  readonly kind: 'template';
  /** Id of the end-of-turn token (`<|im_end|>` for Qwen3). */
  readonly endOfTurnId: number;
  /** Text the template renders after an assistant turn for these tool outputs (unclipped). */
  toolResultsText(outputs: readonly string[]): string;
}

const SENTINEL = '\u0000anneal-sentinel\u0000';

function addedTokensOf(tokenizer: Tokenizer): string[] {
  const withAdded = tokenizer as Tokenizer & {
    addedTokens?: () => readonly { content: string }[];
  };
  return typeof withAdded.addedTokens === 'function'
    ? withAdded.addedTokens().map((t) => t.content)
    : [];
}

/** Remove every reserved string, repeatedly, so removal cannot assemble a new one. */
function stripper(reserved: readonly string[]): (text: string) => string {
  const strings = [...new Set(reserved)].filter((s) => s.length > 0);
  return (text) => {
    let out = text;
    for (let before = ''; before !== out;) {
      before = out;
      for (const s of strings) out = out.split(s).join('');
    }
    return out;
  };
}

/** The end-of-turn token: the first added token the template writes after an assistant's text. */
function findEndOfTurn(options: TemplateFormatOptions): number {
  const { tokenizer, template, endOfTurn } = options;
  if (endOfTurn !== undefined) {
    const id = tokenizer.specialTokenId(endOfTurn);
    const ids = tokenizer.encode(endOfTurn);
    if (id === undefined || ids.length !== 1 || ids[0] !== id) {
      throw new FormatError(`endOfTurn: '${endOfTurn}' is not a single added token`);
    }
    return id;
  }
  const text = template.render(
    [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: SENTINEL },
    ],
    { addGenerationPrompt: false, ...(options.templateArgs && { args: options.templateArgs }) },
  );
  const at = text.lastIndexOf(SENTINEL);
  const after = at < 0 ? [] : tokenizer.encode(text.slice(at + SENTINEL.length));
  const id = after.find((t) => tokenizer.specialTokenId(tokenizer.decode([t])) === t);
  if (id === undefined) {
    throw new FormatError(
      'endOfTurn: the chat template writes no added token after an assistant message; set it',
    );
  }
  return id;
}

/** Cut `after` past the `count`-th occurrence of `marker`. */
function cutAfter(after: string, marker: string, count: number): string {
  let at = 0;
  for (let k = 0; k < count; k++) {
    const found = after.indexOf(marker, at);
    if (found < 0) {
      throw new FormatError(`the chat template's tool messages moved its end-of-turn '${marker}'`);
    }
    at = found + marker.length;
  }
  return after.slice(at);
}

/** Split `budget` tokens over contents of these lengths, short ones first (water-filling). */
function fairShares(lengths: readonly number[], budget: number): number[] {
  const shares = lengths.map(() => 0);
  const order = lengths
    .map((_, i) => i)
    .sort((a, b) => (lengths[a] as number) - (lengths[b] as number));
  let left = budget;
  order.forEach((i, k) => {
    const give = Math.min(lengths[i] as number, Math.floor(left / (order.length - k)));
    shares[i] = give;
    left -= give;
  });
  return shares;
}

type Tags = { open: string; close: string };

const answerOf = (content: string): TurnAction => {
  const answer = content.trim();
  return answer.length > 0 ? { kind: 'answer', answer } : { kind: 'no_answer' };
};

/** As vLLM's qwen3 reasoning and hermes tool parsers deliver the turn (servingParse.ts). */
function readAsServed(text: string, thinking: Tags): TurnAction {
  const { content } = splitReasoningAsServed(text, thinking);
  const calls = toolCallsAsServed(content);
  return calls === undefined ? answerOf(content) : { kind: 'tool_calls', calls };
}

/** Content after the last closing tag; each `<tool_call>` its own call. */
function readLeniently(text: string, thinking: Tags): TurnAction {
  const closed = text.lastIndexOf(thinking.close);
  // Unclosed reasoning has no content yet; closed reasoning is not part of the content.
  const content =
    closed >= 0
      ? text.slice(closed + thinking.close.length)
      : text.includes(thinking.open)
        ? ''
        : text;
  const calls = parseToolCalls(content);
  return calls.length > 0 ? { kind: 'tool_calls', calls } : answerOf(content);
}

export function createTemplateChatFormat(options: TemplateFormatOptions): TemplateChatFormat {
  const { tokenizer, template } = options;
  const tools = options.tools ?? [searchWebToolSpec()];
  const thinking = options.thinking ?? { open: '<think>', close: '</think>' };
  const render = (messages: ChatMessage[], addGenerationPrompt: boolean): string =>
    template.render(messages, {
      tools,
      addGenerationPrompt,
      ...(options.templateArgs && { args: options.templateArgs }),
    });
  const endOfTurnId = findEndOfTurn(options);
  const endOfTurn = tokenizer.decode([endOfTurnId]);
  const strip = stripper([...(options.reserved ?? addedTokensOf(tokenizer)), endOfTurn]);
  const system: ChatMessage[] =
    options.systemPrompt === undefined
      ? []
      : [{ role: 'system', content: strip(options.systemPrompt) }];
  const stops = new Set([endOfTurnId, tokenizer.eosTokenId, ...(options.extraStopTokenIds ?? [])]);
  // Stops that are added tokens decode to their own text after the text before them (no byte
  // merges across an added token), so a decoded turn minus that suffix is its body's decode.
  const addedStopText = new Map(
    [...stops].flatMap((id): Array<[number, string]> => {
      const text = tokenizer.decode([id]);
      return tokenizer.specialTokenId(text) === id ? [[id, text]] : [];
    }),
  );
  const readContent =
    (options.turnParser ?? 'serving') === 'serving' ? readAsServed : readLeniently;

  const toolResultsText = (outputs: readonly string[]): string => {
    const head: ChatMessage[] = [
      ...system,
      { role: 'user', content: '?' },
      {
        role: 'assistant',
        content: '',
        tool_calls: outputs.map(() => ({
          type: 'function' as const,
          function: { name: SEARCH_WEB, arguments: { query: '?' } },
        })),
      },
    ];
    const before = render(head, false);
    const results = outputs.map((content): ChatMessage => ({
      role: 'tool',
      name: SEARCH_WEB,
      content: strip(content),
    }));
    const after = render([...head, ...results], true);
    return cutAfter(after, endOfTurn, before.split(endOfTurn).length - 1);
  };
  const encodeResults = (outputs: readonly string[]): number[] =>
    tokenizer.encode(toolResultsText(outputs));

  /** Keep the first `n` tokens of `text` (a cut UTF-8 character is dropped). */
  const clip = (text: string, n: number): string => {
    const ids = tokenizer.encode(text);
    return n >= ids.length ? text : tokenizer.decode(ids.slice(0, n)).replace(/\uFFFD+$/u, '');
  };

  return {
    kind: 'template',
    tokenizer,
    endOfTurnId,
    stopTokenIds: [...stops],
    toolResultsText,
    withSystemPrompt: (text) =>
      createTemplateChatFormat({
        ...options,
        systemPrompt:
          options.systemPrompt === undefined ? text : `${options.systemPrompt}\n\n${text}`,
      }),
    encodePrompt: (question) =>
      tokenizer.encode(render([...system, { role: 'user', content: strip(question) }], true)),
    parseTurn(tokens, decoded): TurnAction {
      const last = tokens.at(-1);
      if (last === undefined || !stops.has(last)) return { kind: 'incomplete' };
      const stopText = addedStopText.get(last);
      const body =
        decoded !== undefined && stopText !== undefined && decoded.endsWith(stopText)
          ? decoded.slice(0, decoded.length - stopText.length)
          : tokenizer.decode(tokens.slice(0, -1));
      return readContent(body, thinking);
    },
    encodeToolResults(outputs, maxTokens) {
      const contents = outputs.map(strip);
      const full = encodeResults(contents);
      if (maxTokens === undefined || full.length <= maxTokens) return full;
      const empty = encodeResults(contents.map(() => ''));
      if (empty.length > maxTokens) return undefined;
      const shares = fairShares(
        contents.map((c) => tokenizer.encode(c).length),
        maxTokens - empty.length,
      );
      for (;;) {
        const ids = encodeResults(contents.map((c, i) => clip(c, shares[i] as number)));
        if (ids.length <= maxTokens) return ids;
        // Re-encoding at the cut merged differently: take the excess off the largest share.
        const largest = shares.indexOf(Math.max(...shares));
        shares[largest] = Math.max(0, (shares[largest] as number) - (ids.length - maxTokens));
        if (shares.every((s) => s === 0)) return empty;
      }
    },
  };
}
