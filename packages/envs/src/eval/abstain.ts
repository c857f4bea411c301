// Abstention (docs/recipe.md §8.1): a model should say it does not know when the evidence is
// missing. An answer abstains when there is none (the model stopped without `<|answer|>`) or
// when its normalised text is one of a few fixed "don't know" phrasings. Programmatic on
// purpose: the same answers always count the same way, with no judge in the loop.
import { normalizeAnswer } from '../verify/normalize.ts';

const ABSTENTIONS = [
  "I don't know",
  'I do not know',
  'unknown',
  'not known',
  'no answer',
  'cannot be determined',
  'cannot determine',
  'unanswerable',
  'not enough information',
  'insufficient information',
  'I cannot answer',
  "I can't answer",
].map(normalizeAnswer);

/** True when `answer` declines to answer (null, empty, or a fixed "don't know" phrasing). */
export function isAbstention(answer: string | null | undefined): boolean {
  if (answer === null || answer === undefined) return true;
  const text = normalizeAnswer(answer);
  return text.length === 0 || ABSTENTIONS.includes(text);
}
