// Verifiable QA reward r_base (docs/recipe.md §4): normalised exact match against the answer or an alias.
import { normalizeAnswer } from './normalize.ts';

export interface AnswerKey {
  answer: string;
  aliases?: readonly string[];
}

/** True when the prediction equals the answer or an alias after normalisation. */
export function verifyAnswer(prediction: string | null | undefined, key: AnswerKey): boolean {
  if (prediction === null || prediction === undefined) return false;
  const predicted = normalizeAnswer(prediction);
  if (predicted.length === 0) return false;
  return [key.answer, ...(key.aliases ?? [])].some((gold) => normalizeAnswer(gold) === predicted);
}
