// Programmatic checks for objective rubrics (docs/recipe.md §3 examples: language, must/must-not contain
// words or characters, citation markers).
import { detectLanguage } from './language.ts';
import type { RubricCheck } from './types.ts';

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Whole-word match for terms made of word characters at both ends, substring otherwise. */
function termPattern(term: string, caseSensitive: boolean): RegExp {
  const startsWord = /^[\p{L}\p{N}_]/u.test(term);
  const endsWord = /[\p{L}\p{N}_]$/u.test(term);
  const body = escapeRegex(term);
  const source = `${startsWord ? '(?<![\\p{L}\\p{N}_])' : ''}${body}${endsWord ? '(?![\\p{L}\\p{N}_])' : ''}`;
  return new RegExp(source, caseSensitive ? 'u' : 'iu');
}

function contains(text: string, term: string, caseSensitive = false): boolean {
  return termPattern(term, caseSensitive).test(text);
}

export function runCheck(check: RubricCheck, response: string): boolean {
  switch (check.type) {
    case 'language':
      return detectLanguage(response).language === check.language;
    case 'contains_all':
      return check.terms.every((t) => contains(response, t, check.caseSensitive));
    case 'contains_any':
      return check.terms.some((t) => contains(response, t, check.caseSensitive));
    case 'contains_none':
      return !check.terms.some((t) => contains(response, t, check.caseSensitive));
    case 'regex':
      return new RegExp(check.pattern, check.flags ?? 'u').test(response) === check.mustMatch;
    case 'max_words':
      return (response.match(/\S+/g)?.length ?? 0) <= check.max;
  }
}

/** Problems with a check's parameters (empty terms, invalid regex), as `path: message`. */
export function checkProblems(check: RubricCheck, path: string): string[] {
  switch (check.type) {
    case 'language':
      return [];
    case 'contains_all':
    case 'contains_any':
    case 'contains_none':
      return check.terms.length === 0 ? [`${path}.terms: must have at least one term`] : [];
    case 'regex':
      try {
        new RegExp(check.pattern, check.flags ?? 'u');
        return [];
      } catch (err) {
        return [`${path}.pattern: invalid regex (${(err as Error).message})`];
      }
    case 'max_words':
      return Number.isInteger(check.max) && check.max > 0
        ? []
        : [`${path}.max: must be a positive integer`];
  }
}
