// Reading tool calls in the Hermes format that Qwen2.5/Qwen3 chat templates teach:
//   <tool_call>\n{"name": "search_web", "arguments": {"query": "…"}}\n</tool_call>
// and declaring `search_web` to the template as a JSON-schema function tool. A call that cannot
// run (bad JSON, unknown tool, bad arguments, no closing tag) is returned as a failed call with
// the reason: the loop counts it as a tool error (docs/recipe.md §4) and shows the reason to the
// model as the tool's output — it never ends the rollout by itself.
import type { ChatToolSpec } from '@anneal/engines';
import type { ParsedToolCall } from '../format/chatFormat.ts';
import { DEFAULT_LIMITS, type SearchLimits } from '../search/limits.ts';

export const SEARCH_WEB = 'search_web';
const OPEN = '<tool_call>';
const CLOSE = '</tool_call>';
/** Longest piece of the model's text echoed back in an error. */
const ECHO_CHARS = 80;

/** What a model is told about search_web: results per call (as rendered) and the longest query;
 * either left out: the default limits. */
export type SearchToolDescription = Partial<
  Pick<SearchLimits, 'resultsPerCall' | 'maxQueryLength'>
>;

/** `search_web` as an OpenAI/HF function tool (what chat templates print in their tools block). */
export function searchWebToolSpec(limits: SearchToolDescription = {}): ChatToolSpec {
  const resultsPerCall = limits.resultsPerCall ?? DEFAULT_LIMITS.resultsPerCall;
  const maxQueryLength = limits.maxQueryLength ?? DEFAULT_LIMITS.maxQueryLength;
  return {
    type: 'function',
    function: {
      name: SEARCH_WEB,
      description: `Search the web. Returns up to ${resultsPerCall} results (title, URL, snippet).`,
      parameters: {
        type: 'object',
        properties: {
          query: {
            type: 'string',
            description: `The search query, at most ${maxQueryLength} characters.`,
          },
        },
        required: ['query'],
      },
    },
  };
}

const echo = (text: string): string =>
  JSON.stringify(text.length > ECHO_CHARS ? `${text.slice(0, ECHO_CHARS)}…` : text);

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** One `<tool_call>` body: a JSON object naming search_web with a string `query`. */
export function parseToolCallBody(body: string): ParsedToolCall {
  let call: unknown;
  try {
    call = JSON.parse(body);
  } catch {
    return { ok: false, detail: `tool call is not valid JSON: ${echo(body.trim())}` };
  }
  if (!isObject(call)) {
    return { ok: false, detail: 'tool call must be a JSON object {"name", "arguments"}' };
  }
  const name = call['name'];
  if (typeof name !== 'string') return { ok: false, detail: 'tool call has no string "name"' };
  let args = call['arguments'];
  if (typeof args === 'string') {
    // Some models write the arguments as a JSON string, as in OpenAI's API.
    try {
      args = JSON.parse(args);
    } catch {
      args = undefined;
    }
  }
  return argumentsCall(name, args);
}

/** A call of tool `name` with these (decoded) arguments, as search_web runs it. */
export function argumentsCall(name: string, args: unknown): ParsedToolCall {
  if (name !== SEARCH_WEB) {
    return { ok: false, detail: `unknown tool ${echo(name)} (available: ${SEARCH_WEB})` };
  }
  if (!isObject(args)) return { ok: false, detail: '"arguments" must be a JSON object' };
  const unknown = Object.keys(args).filter((key) => key !== 'query');
  if (unknown.length > 0) {
    return { ok: false, detail: `unknown argument ${echo(unknown[0] as string)} (expected query)` };
  }
  const query = args['query'];
  if (typeof query !== 'string') return { ok: false, detail: 'arguments.query must be a string' };
  return { ok: true, query };
}

/** Every `<tool_call>…</tool_call>` of an assistant turn's text, in order. An opening tag
 * without a closing one, or a closing tag without an opening one, is one failed call. */
export function parseToolCalls(text: string): ParsedToolCall[] {
  const calls: ParsedToolCall[] = [];
  let at = 0;
  for (;;) {
    const open = text.indexOf(OPEN, at);
    const strayClose = text.indexOf(CLOSE, at);
    if (strayClose >= 0 && (open < 0 || strayClose < open)) {
      calls.push({ ok: false, detail: `${CLOSE} without ${OPEN}` });
      at = strayClose + CLOSE.length;
      continue;
    }
    if (open < 0) return calls;
    const close = text.indexOf(CLOSE, open + OPEN.length);
    if (close < 0) {
      calls.push({ ok: false, detail: `${OPEN} without ${CLOSE}` });
      return calls;
    }
    calls.push(parseToolCallBody(text.slice(open + OPEN.length, close)));
    at = close + CLOSE.length;
  }
}
