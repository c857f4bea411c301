// Validation of rubrics in rubric-prompt rows: a string (LLM-judged) or {text, check?}.
import { checkProblems } from '../rubrics/programmatic.ts';
import type { LanguageCode } from '../rubrics/language.ts';
import type { Rubric, RubricCheck } from '../rubrics/types.ts';
import { arrayOf, isObject, join, nonEmptyString, noUnknownFields, stringItem } from './fields.ts';
import type { Json, Issues } from './fields.ts';

export const LANGUAGES: readonly Exclude<LanguageCode, 'und'>[] = [
  'en',
  'nl',
  'de',
  'fr',
  'es',
  'id',
  'ko',
  'ja',
  'zh',
  'ru',
  'ar',
  'el',
];
const CHECK_FIELDS: Record<RubricCheck['type'], readonly string[]> = {
  language: ['type', 'language'],
  contains_all: ['type', 'terms', 'caseSensitive'],
  contains_any: ['type', 'terms', 'caseSensitive'],
  contains_none: ['type', 'terms', 'caseSensitive'],
  regex: ['type', 'pattern', 'flags', 'mustMatch'],
  max_words: ['type', 'max'],
};

function optionalBoolean(obj: Json, key: string, path: string, issues: Issues): void {
  if (obj[key] !== undefined && typeof obj[key] !== 'boolean')
    issues.add(join(path, key), 'must be a boolean');
}

function fieldsOf(check: Json, type: RubricCheck['type'], path: string, issues: Issues): void {
  switch (type) {
    case 'language':
      if (!LANGUAGES.includes(check['language'] as never)) {
        issues.add(join(path, 'language'), `must be one of ${LANGUAGES.join(', ')}`);
      }
      return;
    case 'contains_all':
    case 'contains_any':
    case 'contains_none':
      arrayOf(check, 'terms', path, issues, stringItem(issues));
      optionalBoolean(check, 'caseSensitive', path, issues);
      return;
    case 'regex':
      nonEmptyString(check, 'pattern', path, issues);
      if (check['flags'] !== undefined && typeof check['flags'] !== 'string')
        issues.add(join(path, 'flags'), 'must be a string');
      if (typeof check['mustMatch'] !== 'boolean')
        issues.add(join(path, 'mustMatch'), 'must be a boolean');
      return;
    case 'max_words':
      return;
  }
}

function validateCheck(value: unknown, path: string, issues: Issues): RubricCheck | undefined {
  if (!isObject(value)) {
    issues.add(path, 'must be an object');
    return undefined;
  }
  const type = value['type'];
  if (typeof type !== 'string' || !(type in CHECK_FIELDS)) {
    issues.add(join(path, 'type'), `must be one of ${Object.keys(CHECK_FIELDS).join(', ')}`);
    return undefined;
  }
  const before = issues.list.length;
  const checkType = type as RubricCheck['type'];
  noUnknownFields(value, CHECK_FIELDS[checkType], path, issues);
  fieldsOf(value, checkType, path, issues);
  if (issues.list.length > before) return undefined;
  const check = value as unknown as RubricCheck;
  for (const problem of checkProblems(check, path)) {
    const [where, ...rest] = problem.split(': ');
    issues.add(where as string, rest.join(': '));
  }
  return issues.list.length > before ? undefined : check;
}

export function rubricItem(issues: Issues): (value: unknown, path: string) => Rubric | undefined {
  return (value, path) => {
    if (typeof value === 'string') {
      if (value.trim().length > 0) return { text: value };
      issues.add(path, 'must be a non-empty string or {text, check}');
      return undefined;
    }
    if (!isObject(value)) {
      issues.add(path, 'must be a non-empty string or {text, check}');
      return undefined;
    }
    noUnknownFields(value, ['text', 'check'], path, issues);
    const text = nonEmptyString(value, 'text', path, issues);
    if (value['check'] === undefined) return text === undefined ? undefined : { text };
    const check = validateCheck(value['check'], join(path, 'check'), issues);
    return text === undefined || check === undefined ? undefined : { text, check };
  };
}
