// One input line of `anneal reward score`: a GRPO group
//   {"group": "<id>", "rollouts": [{"baseReward": 0|1, "preferenceScore": 0..1, "toolCalls": int,
//    "toolErrors": int, "length": int, "refLength": int}, ...]}
// Every problem is reported with its field path; extra keys are ignored (recorded rollouts may
// carry more, e.g. the text). The old names `base` and `preference` are read until
// DEPRECATED_NAMES_UNTIL (docs/recipe.md "Renamed fields").
import type { GroupOutcomes } from '@anneal/rl';
import { describeValue, type FieldProblem } from './problems.ts';

export interface GroupLine {
  group: string;
  outcomes: GroupOutcomes;
}

export type GroupLineResult =
  { ok: true; value: GroupLine } | { ok: false; problems: FieldProblem[] };

type Check = (value: unknown) => string | null;

/**
 * Largest count accepted (2^31 − 1): far above any real tool-call count or token length, and small
 * enough that the tool baseline's integer-uniform draw over [min, ⌈mean⌉] (docs/recipe.md §4) and every
 * sum of counts stay exact in a double.
 */
export const MAX_COUNT = 2 ** 31 - 1;

const isCount: Check = (v) =>
  typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 && v <= MAX_COUNT
    ? null
    : `must be an integer in [0, ${MAX_COUNT}], got ${describeValue(v)}`;

const ROLLOUT_FIELDS: ReadonlyArray<[keyof GroupOutcomes, Check]> = [
  ['baseReward', (v) => (v === 0 || v === 1 ? null : `must be 0 or 1, got ${describeValue(v)}`)],
  [
    'preferenceScore',
    (v) =>
      typeof v === 'number' && v >= 0 && v <= 1
        ? null
        : `must be a number in [0, 1], got ${describeValue(v)}`,
  ],
  ['toolCalls', isCount],
  ['toolErrors', isCount],
  ['length', isCount],
  ['refLength', isCount],
];

/** Names a line may still use for a field until DEPRECATED_NAMES_UNTIL (2027-06-30). */
const OLD_NAMES: Partial<Record<keyof GroupOutcomes, string>> = {
  baseReward: 'base',
  preferenceScore: 'preference',
};

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function emptyOutcomes(size: number): { [K in keyof GroupOutcomes]: number[] } {
  const column = () => new Array<number>(size).fill(0);
  return {
    baseReward: column(),
    preferenceScore: column(),
    toolCalls: column(),
    toolErrors: column(),
    length: column(),
    refLength: column(),
  };
}

/** Validate rollouts[i] into the column arrays; push problems with their paths. */
function readRollout(
  raw: unknown,
  i: number,
  columns: ReturnType<typeof emptyOutcomes>,
  problems: FieldProblem[],
): void {
  const path = `rollouts[${i}]`;
  if (!isObject(raw)) {
    problems.push({ field: path, problem: `must be an object, got ${describeValue(raw)}` });
    return;
  }
  for (const [key, check] of ROLLOUT_FIELDS) {
    const old = OLD_NAMES[key];
    const name = raw[key] === undefined && old !== undefined && raw[old] !== undefined ? old : key;
    const value = raw[name];
    const problem = value === undefined ? 'missing' : check(value);
    if (problem !== null) problems.push({ field: `${path}.${name}`, problem });
    else columns[key][i] = value as number;
  }
  const { toolCalls, toolErrors } = raw;
  if (
    isCount(toolCalls) === null &&
    isCount(toolErrors) === null &&
    (toolErrors as number) > (toolCalls as number)
  ) {
    problems.push({
      field: `${path}.toolErrors`,
      problem: `exceeds toolCalls (${toolErrors} > ${toolCalls})`,
    });
  }
}

/** Deepest nesting a line may have: a group is 3 levels (line, rollouts, rollout). */
export const MAX_JSON_DEPTH = 32;

/** Whether `text` nests arrays/objects deeper than `max` (brackets inside strings do not count).
 * Checked before JSON.parse: a 100,000-deep line would overflow the stack of whatever walks
 * the parsed value (the message of a problem with it included). */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** Parse and validate one line (already known to be non-blank). */
export function parseGroupLine(text: string): GroupLineResult {
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) {
    return {
      ok: false,
      problems: [{ field: '$', problem: `nested deeper than ${MAX_JSON_DEPTH} levels` }],
    };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    return {
      ok: false,
      problems: [{ field: '$', problem: `invalid JSON (${(error as Error).message})` }],
    };
  }
  if (!isObject(raw))
    return {
      ok: false,
      problems: [{ field: '$', problem: `must be a JSON object, got ${describeValue(raw)}` }],
    };
  const problems: FieldProblem[] = [];
  if (raw.group === undefined) problems.push({ field: 'group', problem: 'missing' });
  else if (typeof raw.group !== 'string')
    problems.push({ field: 'group', problem: `must be a string, got ${describeValue(raw.group)}` });
  const rollouts = raw.rollouts;
  if (!Array.isArray(rollouts) || rollouts.length === 0) {
    const problem =
      rollouts === undefined
        ? 'missing'
        : `must be a non-empty array, got ${describeValue(rollouts)}`;
    problems.push({ field: 'rollouts', problem });
    return { ok: false, problems };
  }
  const columns = emptyOutcomes(rollouts.length);
  rollouts.forEach((rollout, i) => readRollout(rollout, i, columns, problems));
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, value: { group: raw.group as string, outcomes: columns } };
}
