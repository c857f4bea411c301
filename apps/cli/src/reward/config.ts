// The reward config file of `anneal reward score`: a JSON object whose keys are all optional and
// default to the GRPO run spec's defaults (./defaults.ts). Unknown keys are errors (a typo must not silently
// fall back to a default).
import type { RewardConfig } from '@anneal/rl';
import { REWARD_DEFAULTS } from './defaults.ts';
import { describeValue, type FieldProblem } from './problems.ts';

const NUMBER_KEYS = ['alphaWin', 'alphaLose', 'betaLose', 'lambdaTool', 'lambdaLen'] as const;
const BOOLEAN_KEYS = ['gate', 'normalizeStd'] as const;
const KNOWN_KEYS: ReadonlySet<string> = new Set([...NUMBER_KEYS, ...BOOLEAN_KEYS]);

export type ConfigResult =
  { ok: true; config: RewardConfig } | { ok: false; problems: FieldProblem[] };

/** Parse and validate the config file's text. */
export function parseRewardConfig(text: string): ConfigResult {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    return {
      ok: false,
      problems: [{ field: '$', problem: `invalid JSON (${(error as Error).message})` }],
    };
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return {
      ok: false,
      problems: [{ field: '$', problem: `must be a JSON object, got ${describeValue(raw)}` }],
    };
  }
  const fields = raw as Record<string, unknown>;
  const problems: FieldProblem[] = [];
  const config: RewardConfig = { ...REWARD_DEFAULTS };
  for (const key of Object.keys(fields)) {
    if (!KNOWN_KEYS.has(key))
      problems.push({ field: key, problem: `unknown key (known: ${[...KNOWN_KEYS].join(', ')})` });
  }
  for (const key of NUMBER_KEYS) {
    const value = fields[key];
    if (value === undefined) continue;
    if (typeof value === 'number' && Number.isFinite(value) && value >= 0) config[key] = value;
    else
      problems.push({
        field: key,
        problem: `must be a finite number >= 0, got ${describeValue(value)}`,
      });
  }
  for (const key of BOOLEAN_KEYS) {
    const value = fields[key];
    if (value === undefined) continue;
    if (typeof value === 'boolean') config[key] = value;
    else
      problems.push({ field: key, problem: `must be true or false, got ${describeValue(value)}` });
  }
  return problems.length === 0 ? { ok: true, config } : { ok: false, problems };
}
