// Reading an assistant turn as vLLM serves it with `--reasoning-parser qwen3
// --tool-call-parser hermes` (the Qwen2.5/Qwen3 family), so that a rollout runs exactly the calls
// and sees exactly the content a client of the served model would get:
// - reasoning (vllm/reasoning/qwen3_reasoning_parser.py@693e2a48 `extract_reasoning`): only when
//   the text holds both `<think>` and `</think>`; the text after the first `<think>` is split at
//   its first `</think>`. Otherwise the whole text is content (an unclosed `<think>` included).
// - tool calls (vllm/entrypoints/openai/tool_parsers/hermes_tool_parser.py@836d1f31
//   `extract_tool_calls`): none unless the content holds `<tool_call>`; the bodies are the
//   matches of `<tool_call>(.*?)</tool_call>|<tool_call>(.*)` (so a last, unclosed call runs to
//   the end of the text); every body must `json.loads` to an object with a string `name` and an
//   `arguments` key, or the turn delivers **no** call at all and its whole content is the reply.
//   `arguments` is re-serialised with `json.dumps`, so a string stays a (JSON-encoded) string.
// docs/engines.md "Reading a turn as the server does" holds the table of edge cases.
import type { ParsedToolCall } from '../format/chatFormat.ts';
import { argumentsCall } from './toolCalls.ts';

const THINK_OPEN = '<think>';
const THINK_CLOSE = '</think>';
const OPEN = '<tool_call>';
const BODIES = /<tool_call>([\s\S]*?)<\/tool_call>|<tool_call>([\s\S]*)/g;

/** The content of a turn after vLLM's qwen3 reasoning parser (undefined reasoning: none split). */
export function splitReasoningAsServed(
  text: string,
  tags: { open: string; close: string } = { open: THINK_OPEN, close: THINK_CLOSE },
): { reasoning?: string; content: string } {
  if (!text.includes(tags.open) || !text.includes(tags.close)) return { content: text };
  const afterOpen = text.slice(text.indexOf(tags.open) + tags.open.length);
  const close = afterOpen.indexOf(tags.close);
  if (close < 0) return { content: afterOpen };
  return {
    reasoning: afterOpen.slice(0, close),
    content: afterOpen.slice(close + tags.close.length),
  };
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The calls vLLM's hermes parser delivers for this content, each read as search_web would run
 * it; undefined when it delivers none (no `<tool_call>`, or any body that is not a JSON object
 * with a string `name` and an `arguments` key).
 */
export function toolCallsAsServed(content: string): ParsedToolCall[] | undefined {
  if (!content.includes(OPEN)) return undefined;
  const raw: { name: string; args: unknown }[] = [];
  for (const match of content.matchAll(BODIES)) {
    const body = match[1] || match[2] || '';
    let call: unknown;
    try {
      call = JSON.parse(body);
    } catch {
      return undefined;
    }
    if (!isObject(call) || typeof call['name'] !== 'string' || !('arguments' in call)) {
      return undefined;
    }
    raw.push({ name: call['name'], args: call['arguments'] });
  }
  return raw.map(({ name, args }) =>
    typeof args === 'string'
      ? { ok: false, detail: '"arguments" must be a JSON object (it is a string)' }
      : argumentsCall(name, args),
  );
}
