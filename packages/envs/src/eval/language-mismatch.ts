// Language mismatch (docs/recipe.md §8.1), programmatic: an answer mismatches when its detected
// language is determined and differs from the question's (the dataset's `language`, else the
// question's detected one). Short answers (a name, a number) are usually undetermined and never
// count, so the rate measures answers that switched language, not ones too short to tell.
import { detectLanguage, type LanguageCode } from '../rubrics/language.ts';

export function languageMismatch(
  question: string,
  answer: string | null,
  declared?: LanguageCode,
): boolean {
  if (answer === null) return false;
  const expected = declared ?? detectLanguage(question).language;
  if (expected === 'und') return false;
  const got = detectLanguage(answer).language;
  return got !== 'und' && got !== expected;
}
