// Row shapes of the JSONL datasets (README "Datasets") and their validators.
import { DEFAULT_MARKERS } from '../format/toolCallFormat.ts';
import type { LanguageCode } from '../rubrics/language.ts';
import type { Rubric } from '../rubrics/types.ts';
import {
  arrayOf,
  isObject,
  join,
  nonEmptyString,
  noUnknownFields,
  optionalString,
  stringItem,
} from './fields.ts';
import type { Json, Issues } from './fields.ts';
import { LANGUAGES, rubricItem } from './rubricSchema.ts';

export interface QaRow {
  question: string;
  answer: string;
  aliases?: string[];
  /** The evidence is missing: an eval scores abstaining as correct (docs/recipe.md §8.1). */
  unanswerable?: boolean;
  /** The question's language; the eval's language-mismatch check detects it when absent. */
  language?: Exclude<LanguageCode, 'und'>;
}

export interface RubricPromptRow {
  prompt: string;
  rubrics: Rubric[];
  reference?: string;
}

/** One step of an SFT tool-use trajectory; `result` turns are tool output (masked from the loss). */
export type SftTurn = { call: string } | { result: string } | { answer: string };

export interface SftRow {
  prompt: string;
  /** Assistant text in the tool-call format (markers as text); trained on except its tool-output
   * blocks (result-start … result-end), which are masked like `result` turns. */
  completion?: string;
  turns?: SftTurn[];
}

export interface PreferenceRow {
  prompt: string;
  chosen: string;
  rejected: string;
}

export interface DatasetRows {
  qa: QaRow;
  rubric: RubricPromptRow;
  sft: SftRow;
  preference: PreferenceRow;
}
export type DatasetKind = keyof DatasetRows;
export const DATASET_KINDS: readonly DatasetKind[] = ['qa', 'rubric', 'sft', 'preference'];

type RowValidator<T> = (row: Json, issues: Issues) => T | undefined;

function qa(row: Json, issues: Issues): QaRow | undefined {
  noUnknownFields(row, ['question', 'answer', 'aliases', 'unanswerable', 'language'], '', issues);
  const question = nonEmptyString(row, 'question', '', issues);
  const answer = nonEmptyString(row, 'answer', '', issues);
  const aliases =
    row['aliases'] === undefined ? [] : arrayOf(row, 'aliases', '', issues, stringItem(issues), 0);
  const unanswerable = row['unanswerable'];
  if (unanswerable !== undefined && typeof unanswerable !== 'boolean') {
    issues.add(join('', 'unanswerable'), 'must be a boolean');
    return undefined;
  }
  const language = row['language'];
  if (language !== undefined && !LANGUAGES.includes(language as never)) {
    issues.add(join('', 'language'), `must be one of ${LANGUAGES.join(', ')}`);
    return undefined;
  }
  if (question === undefined || answer === undefined || aliases === undefined) return undefined;
  return {
    question,
    answer,
    ...(aliases.length > 0 && { aliases }),
    ...(unanswerable === true && { unanswerable }),
    ...(language !== undefined && { language: language as Exclude<LanguageCode, 'und'> }),
  };
}

function rubric(row: Json, issues: Issues): RubricPromptRow | undefined {
  noUnknownFields(row, ['prompt', 'rubrics', 'reference'], '', issues);
  const prompt = nonEmptyString(row, 'prompt', '', issues);
  const rubrics = arrayOf(row, 'rubrics', '', issues, rubricItem(issues));
  const reference = optionalString(row, 'reference', '', issues);
  if (prompt === undefined || rubrics === undefined) return undefined;
  return reference === undefined ? { prompt, rubrics } : { prompt, rubrics, reference };
}

const TURN_KEYS = ['call', 'result', 'answer'] as const;

function turn(issues: Issues) {
  return (value: unknown, path: string): SftTurn | undefined => {
    if (!isObject(value)) {
      issues.add(path, 'must be an object with one of call, result, answer');
      return undefined;
    }
    const keys = Object.keys(value);
    const key = keys[0];
    if (keys.length !== 1 || !TURN_KEYS.includes(key as never)) {
      issues.add(path, 'must have exactly one of call, result, answer');
      return undefined;
    }
    if (typeof value[key as string] !== 'string') {
      issues.add(join(path, key as string), 'must be a string');
      return undefined;
    }
    return value as SftTurn;
  };
}

/** Turn order: each result follows a call, each call is followed by its result, the last turn is the answer. */
function turnOrder(turns: readonly SftTurn[], issues: Issues): void {
  turns.forEach((t, i) => {
    const prev = turns[i - 1];
    if ('result' in t && (prev === undefined || !('call' in prev)))
      issues.add(`turns[${i}].result`, 'must follow a call');
    if ('call' in t && i + 1 < turns.length && !('result' in (turns[i + 1] as SftTurn))) {
      issues.add(`turns[${i + 1}]`, 'must be the result of the call before it');
    }
    if ('answer' in t && i !== turns.length - 1)
      issues.add(`turns[${i}].answer`, 'must be the last turn');
  });
  const last = turns[turns.length - 1];
  if (last !== undefined && !('answer' in last))
    issues.add(`turns[${turns.length - 1}]`, 'the last turn must be an answer');
}

/** Tool-output blocks of a completion must balance: they are masked from the loss (tokens.ts),
 * and an open one would hide where tool output ends. Checked on the default marker strings;
 * a base model's own markers are checked when its worker tokenizes the row. */
function resultBlockIssue(completion: string): string | undefined {
  const { resultStart: open, resultEnd: close } = DEFAULT_MARKERS;
  const marker = new RegExp(`${escape(open)}|${escape(close)}`, 'g');
  let openedAt = -1;
  for (const match of completion.matchAll(marker)) {
    const at = match.index;
    if (match[0] === open) {
      if (openedAt >= 0)
        return `${open} at character ${at} opens a tool output inside the one opened at ${openedAt}`;
      openedAt = at;
    } else if (openedAt < 0) return `${close} at character ${at} closes no tool output`;
    else openedAt = -1;
  }
  return openedAt >= 0 ? `${open} at character ${openedAt} has no closing ${close}` : undefined;
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function sft(row: Json, issues: Issues): SftRow | undefined {
  noUnknownFields(row, ['prompt', 'completion', 'turns'], '', issues);
  const prompt = nonEmptyString(row, 'prompt', '', issues);
  const hasCompletion = row['completion'] !== undefined;
  const hasTurns = row['turns'] !== undefined;
  if (hasCompletion === hasTurns) {
    issues.add(
      hasCompletion ? 'turns' : 'completion',
      hasCompletion ? 'give either completion or turns, not both' : 'is required (or turns)',
    );
    return undefined;
  }
  if (hasCompletion) {
    const completion = nonEmptyString(row, 'completion', '', issues);
    const unbalanced = completion === undefined ? undefined : resultBlockIssue(completion);
    if (unbalanced !== undefined) issues.add('completion', unbalanced);
    return prompt === undefined || completion === undefined || unbalanced !== undefined
      ? undefined
      : { prompt, completion };
  }
  const turns = arrayOf(row, 'turns', '', issues, turn(issues));
  if (turns === undefined) return undefined;
  const before = issues.list.length;
  turnOrder(turns, issues);
  return prompt === undefined || issues.list.length > before ? undefined : { prompt, turns };
}

function preference(row: Json, issues: Issues): PreferenceRow | undefined {
  noUnknownFields(row, ['prompt', 'chosen', 'rejected'], '', issues);
  const prompt = nonEmptyString(row, 'prompt', '', issues);
  const chosen = nonEmptyString(row, 'chosen', '', issues);
  const rejected = nonEmptyString(row, 'rejected', '', issues);
  if (chosen !== undefined && chosen === rejected)
    issues.add('rejected', 'must differ from chosen');
  if (prompt === undefined || chosen === undefined || rejected === undefined || chosen === rejected)
    return undefined;
  return { prompt, chosen, rejected };
}

export const ROW_VALIDATORS: { [K in DatasetKind]: RowValidator<DatasetRows[K]> } = {
  qa,
  rubric,
  sft,
  preference,
};
