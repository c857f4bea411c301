// Dataset rows -> token sequences in the tool-call format (SFT warm-up, docs/recipe.md §1: loss on
// completion tokens only; prompt and tool-output tokens are masked out).
import type { ToolCallFormat } from '../format/toolCallFormat.ts';
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

/** Tokens + loss mask of an SFT row. A `completion` is encoded as written (its marker strings
 * become special tokens) and gets <|eos|> appended when it does not end with it. */
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
    push(completion, true);
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
