// SFT rows written as turns (prompt, call/result pairs, answer) rendered in a model's own chat
// template, laid out exactly as a rollout of that format is (docs/engines.md "Chat templates and
// tool calls"): the template's prompt, each assistant turn as the model would sample it (a
// Hermes <tool_call> or the answer) followed by the end-of-turn token, each tool result as the
// template's delta after that turn. Loss on assistant turns only: prompt and tool-result ids
// (the template's turn headers included) carry weight 0 (docs/recipe.md §1). Every trained turn
// is read back with the format's own parser, so SFT never teaches a turn a rollout would read
// differently. `completion` rows are marker-format text: refused.
import type { TokenExample } from '../data/tokens.ts';
import type { SftRow } from '../data/schemas.ts';
import { FormatError } from '../format/toolCallFormat.ts';
import type { TemplateChatFormat } from './templateFormat.ts';
import { SEARCH_WEB } from './toolCalls.ts';

/** The Hermes call an assistant turn writes (the template's `tool_calls` rendering). */
export function hermesCallText(query: string): string {
  return `<tool_call>\n{"name": "${SEARCH_WEB}", "arguments": {"query": ${JSON.stringify(query)}}}\n</tool_call>`;
}

/** Ids of an assistant turn ending with the end-of-turn token, checked to read back as `want`. */
function assistantTurn(
  format: TemplateChatFormat,
  text: string,
  want: { call: string } | { answer: string },
  field: string,
): number[] {
  const ids = [...format.tokenizer.encode(text), format.endOfTurnId];
  if (ids.slice(0, -1).some((id) => format.stopTokenIds.includes(id))) {
    throw new FormatError(`${field}: contains a stop token of the chat format`);
  }
  const action = format.parseTurn(ids);
  const readBack =
    'call' in want
      ? action.kind === 'tool_calls' &&
        action.calls.length === 1 &&
        action.calls[0]?.ok === true &&
        action.calls[0].query === want.call
      : action.kind === 'answer' && action.answer === want.answer.trim();
  if (!readBack) {
    throw new FormatError(`${field}: the chat format would not read this turn back as written`);
  }
  return ids;
}

/** Tokens + loss mask of a `turns` SFT row in the template's format. */
export function templateSftRowToTokens(row: SftRow, format: TemplateChatFormat): TokenExample {
  if (row.turns === undefined) {
    throw new FormatError(
      'completion: marker-format text cannot be rendered in a chat template; write the row as turns',
    );
  }
  const prompt = format.encodePrompt(row.prompt);
  const tokens = [...prompt];
  const lossMask = new Array<number>(prompt.length).fill(0);
  const push = (ids: readonly number[], trained: boolean) => {
    tokens.push(...ids);
    lossMask.push(...new Array<number>(ids.length).fill(trained ? 1 : 0));
  };
  row.turns.forEach((turn, i) => {
    if ('call' in turn) {
      push(assistantTurn(format, hermesCallText(turn.call), turn, `turns[${i}].call`), true);
    } else if ('result' in turn) {
      push(format.encodeToolResults([turn.result]) ?? [], false);
    } else {
      push(assistantTurn(format, turn.answer, turn, `turns[${i}].answer`), true);
    }
  });
  return { tokens, lossMask, promptLength: prompt.length };
}
