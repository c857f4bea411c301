// Rubrics (docs/recipe.md §3): atomic, objective checks of a response. Objective ones carry a
// programmatic `check`; the rest are judged by an LLM.
import type { LanguageCode } from './language.ts';

export type RubricCheck =
  /** The response is in this language (detected, see language.ts). */
  | { type: 'language'; language: Exclude<LanguageCode, 'und'> }
  /** Every term appears. Terms of word characters match whole words; others (e.g. '&') match
   * anywhere. Case-insensitive unless caseSensitive. */
  | { type: 'contains_all'; terms: readonly string[]; caseSensitive?: boolean }
  /** At least one term appears. */
  | { type: 'contains_any'; terms: readonly string[]; caseSensitive?: boolean }
  /** No term appears ("contains neither u, Plz nor &"). */
  | { type: 'contains_none'; terms: readonly string[]; caseSensitive?: boolean }
  /** The regex matches (or, with `mustMatch: false`, does not match) somewhere. */
  | { type: 'regex'; pattern: string; flags?: string; mustMatch: boolean }
  /** At most this many words. */
  | { type: 'max_words'; max: number };

export interface Rubric {
  /** The rubric as written, e.g. "contains no citation markers of the form [type:idx]". */
  text: string;
  /** Present for objective rubrics; absent ones go to the LLM judge. */
  check?: RubricCheck;
}

/** Citation markers of the form [type:idx], e.g. [web:3] (docs/recipe.md §3 example rubric). */
export const CITATION_MARKER_PATTERN = String.raw`\[[A-Za-z_]+:\d+\]`;

export interface RubricVerdict {
  rubric: Rubric;
  pass: boolean;
  /** 'program' for programmatic checks, 'judge' for the LLM judge. */
  by: 'program' | 'judge';
}
