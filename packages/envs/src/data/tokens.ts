// Dataset rows -> token sequences in the tool-call format (SFT warm-up, docs/recipe.md §1: loss on
// completion tokens only; prompt and tool-output tokens are masked out).
import { FormatError, type ToolCallFormat } from '../format/toolCallFormat.ts';
import type { PreferenceRow, SftRow, SftTurn } from './schemas.ts';

export interface TokenExample {
  tokens: number[];
  /** 1 = trained (assistant tokens), 0 = prompt / tool output. */
  lossMask: number[];
  promptLength: number;
}

function turnTokens(turn: SftTurn, format: ToolCallFormat): { tokens: number[]; trained: boolean } {
  const { ids, tokenizer } = format;
  if ('call' in turn)
    return { tokens: [ids.callStart, ...tokenizer.encode(turn.call), ids.callEnd], trained: true };
  if ('result' in turn) return { tokens: format.encodeResult(turn.result), trained: false };
  return { tokens: [ids.answer, ...tokenizer.encode(turn.answer), ids.eos], trained: true };
}

/**
 * Loss mask of a completion written as text: 1 everywhere except tool-output blocks, from the
 * result-start marker through its result-end marker, which the environment (not the model)
 * writes in a rollout (docs/recipe.md §1: tool-output tokens are masked out). An unbalanced
 * marker is an error: guessing where tool output ends could train the model on it.
 */
export function completionLossMask(
  completion: readonly number[],
  format: ToolCallFormat,
): number[] {
  const { resultStart, resultEnd } = format.ids;
  const { resultStart: open, resultEnd: close } = format.markers;
  const mask = new Array<number>(completion.length).fill(1);
  let openedAt = -1;
  completion.forEach((id, i) => {
    if (id === resultStart) {
      if (openedAt >= 0)
        throw new FormatError(
          `completion: ${open} at token ${i} opens a tool output inside the one opened at token ${openedAt}`,
        );
      openedAt = i;
    } else if (id === resultEnd && openedAt < 0) {
      throw new FormatError(`completion: ${close} at token ${i} closes no tool output`);
    }
    if (openedAt >= 0) mask[i] = 0;
    if (id === resultEnd) openedAt = -1;
  });
  if (openedAt >= 0)
    throw new FormatError(`completion: ${open} at token ${openedAt} has no closing ${close}`);
  return mask;
}

/** Tokens + loss mask of an SFT row. A `completion` is encoded as written (its marker strings
 * become special tokens) and gets <|eos|> appended when it does not end with it; its tool-output
 * blocks are masked like `result` turns. */
export function sftRowToTokens(row: SftRow, format: ToolCallFormat): TokenExample {
  const prompt = format.encodePrompt(row.prompt);
  const tokens = [...prompt];
  const lossMask = new Array<number>(prompt.length).fill(0);
  const push = (ids: readonly number[], trained: boolean) => {
    tokens.push(...ids);
    lossMask.push(...new Array<number>(ids.length).fill(trained ? 1 : 0));
  };
  if (row.turns) {
    for (const turn of row.turns) {
      const { tokens: ids, trained } = turnTokens(turn, format);
      push(ids, trained);
    }
  } else {
    const completion = format.tokenizer.encode(row.completion ?? '');
    if (completion[completion.length - 1] !== format.ids.eos) completion.push(format.ids.eos);
    tokens.push(...completion);
    lossMask.push(...completionLossMask(completion, format));
  }
  return { tokens, lossMask, promptLength: prompt.length };
}

export interface PreferenceTokens {
  prompt: number[];
  chosen: number[];
  rejected: number[];
}

/** Token form of a preference pair for the Bradley–Terry reward model (docs/recipe.md §5). */
export function preferenceRowToTokens(
  row: PreferenceRow,
  format: ToolCallFormat,
): PreferenceTokens {
  return {
    prompt: format.encodePrompt(row.prompt),
    chosen: format.tokenizer.encode(row.chosen),
    rejected: format.tokenizer.encode(row.rejected),
  };
}
