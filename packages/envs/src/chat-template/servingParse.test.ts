// The rollout reads a Qwen3 turn as vLLM delivers it with `--reasoning-parser qwen3
// --tool-call-parser hermes`. Each row is an edge case of the upstream parsers, read at:
//   vllm-project/vllm vllm/reasoning/qwen3_reasoning_parser.py@693e2a480214549321ea5eba9db5b132a09f7bee
//     (`extract_reasoning`: both tags needed; split after the first <think> at the first </think>)
//   vllm-project/vllm vllm/entrypoints/openai/tool_parsers/hermes_tool_parser.py@836d1f31211015f62485b0151fbbf85b6cc7a934
//     (`extract_tool_calls`: regex `<tool_call>(.*?)</tool_call>|<tool_call>(.*)`, every body
//     json.loads'ed inside one try — any failure: tools_called=False, content=model_output;
//     `arguments` re-serialised with json.dumps, so a string stays a string)
// The `served` column is what a client of that server receives; `lenient` is the spec-level mode.
import { loadChatTemplate, loadHfTokenizer } from '@anneal/engines';
import { QWEN3_TOKENIZER_CONFIG, QWEN3_TOKENIZER_JSON } from '@anneal/engines/testing';
import { describe, expect, it } from 'vitest';
import type { ParsedToolCall, TurnAction } from '../format/chatFormat.ts';
import { splitReasoningAsServed, toolCallsAsServed } from './servingParse.ts';
import { createTemplateChatFormat } from './templateFormat.ts';

const tokenizer = loadHfTokenizer(QWEN3_TOKENIZER_JSON, { eosToken: '<|im_end|>' });
const template = loadChatTemplate(QWEN3_TOKENIZER_CONFIG);
const served = createTemplateChatFormat({ tokenizer, template });
const lenient = createTemplateChatFormat({ tokenizer, template, turnParser: 'lenient' });
const IM_END = tokenizer.specialTokenId('<|im_end|>') as number;
const turn = (text: string) => [...tokenizer.encode(text), IM_END];

const call = (args: unknown, name = 'search_web') =>
  `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;
const answer = (text: string): TurnAction => ({ kind: 'answer', answer: text });
const calls = (...c: ParsedToolCall[]): TurnAction => ({ kind: 'tool_calls', calls: c });
const ok = (query: string) => ({ ok: true as const, query });
const failed = (detail: string) => ({ ok: false as const, detail });

const A = call({ query: 'a' });
const CASES: [string, string, TurnAction, TurnAction][] = [
  [
    'reasoning ends at the first </think>',
    '<think>\nx</think>\n\nOru</think> Rome',
    answer('Oru</think> Rome'),
    answer('Rome'),
  ],
  [
    'one malformed body: no call is delivered, the content is the reply',
    `<think>\nx\n</think>\n\n${A}\n<tool_call>\n{"name": "search_web", "arguments": {query: b}}\n</tool_call>`,
    answer(`${A}\n<tool_call>\n{"name": "search_web", "arguments": {query: b}}\n</tool_call>`),
    calls(
      ok('a'),
      failed(
        'tool call is not valid JSON: "{\\"name\\": \\"search_web\\", \\"arguments\\": {query: b}}"',
      ),
    ),
  ],
  [
    'string arguments stay a string',
    '<tool_call>\n{"name": "search_web", "arguments": "{\\"query\\": \\"x\\"}"}\n</tool_call>',
    calls(failed('"arguments" must be a JSON object (it is a string)')),
    calls(ok('x')),
  ],
  [
    'an unclosed last call runs to the end of the turn',
    `${A}\n<tool_call>\n${JSON.stringify({ name: 'search_web', arguments: { query: 'b' } })}\n`,
    calls(ok('a'), ok('b')),
    calls(ok('a'), failed('<tool_call> without </tool_call>')),
  ],
  [
    'unclosed reasoning is content, and its calls are delivered',
    `<think>\nlet me search ${A}`,
    calls(ok('a')),
    { kind: 'no_answer' },
  ],
  [
    'a stray </tool_call> is text',
    'Oru</tool_call>',
    answer('Oru</tool_call>'),
    calls(failed('</tool_call> without <tool_call>')),
  ],
  [
    'a body without "arguments" delivers no call',
    `${A}\n<tool_call>\n{"name": "search_web"}\n</tool_call>`,
    answer(`${A}\n<tool_call>\n{"name": "search_web"}\n</tool_call>`),
    calls(ok('a'), failed('"arguments" must be a JSON object')),
  ],
  [
    'an empty body delivers no call',
    '<tool_call></tool_call>',
    answer('<tool_call></tool_call>'),
    calls(failed('tool call is not valid JSON: ""')),
  ],
  [
    'a call inside closed reasoning is reasoning',
    `<think>\nmaybe ${A}\n</think>\n\nOru`,
    answer('Oru'),
    answer('Oru'),
  ],
  [
    'a well-formed call of another tool is delivered (and fails as a tool error)',
    call({}, 'lookup'),
    calls(failed('unknown tool "lookup" (available: search_web)')),
    calls(failed('unknown tool "lookup" (available: search_web)')),
  ],
];

describe('reading a Qwen3 turn as vLLM serves it (qwen3 reasoning + hermes tool parser)', () => {
  it.each(CASES)('%s', (_name, text, asServed, asLenient) => {
    expect(served.parseTurn(turn(text))).toEqual(asServed);
    expect(lenient.parseTurn(turn(text))).toEqual(asLenient);
  });

  it('splits reasoning only when both tags are present, at the first </think> after <think>', () => {
    expect(splitReasoningAsServed('a</think>b')).toEqual({ content: 'a</think>b' });
    expect(splitReasoningAsServed('<think>a')).toEqual({ content: '<think>a' });
    expect(splitReasoningAsServed('x<think>a</think>b</think>c')).toEqual({
      reasoning: 'a',
      content: 'b</think>c',
    });
    // </think> only before <think>: the text after <think> is content
    expect(splitReasoningAsServed('</think>x<think>y')).toEqual({ content: 'y' });
  });

  it('delivers no calls for text without <tool_call> or with a non-object body', () => {
    expect(toolCallsAsServed('plain')).toBeUndefined();
    expect(toolCallsAsServed('<tool_call>[1]</tool_call>')).toBeUndefined();
    expect(
      toolCallsAsServed('<tool_call>{"name": 3, "arguments": {}}</tool_call>'),
    ).toBeUndefined();
    // nested opening tag: the first body is `{…}<tool_call>{…}`, which is not JSON
    expect(toolCallsAsServed(`<tool_call>{}${A}`)).toBeUndefined();
  });

  it('is the default parser', () => {
    const explicit = createTemplateChatFormat({ tokenizer, template, turnParser: 'serving' });
    for (const [, text] of CASES) {
      expect(served.parseTurn(turn(text))).toEqual(explicit.parseTurn(turn(text)));
    }
  });
});
