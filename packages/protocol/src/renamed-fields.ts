// Fields renamed to the recipe's vocabulary (docs/recipe.md "Glossary" and "Renamed fields").
// Records an older worker stored keep their old names on disk and in Redis: readers pass them
// through `upgrade…` here, which gives each its new name. Until DEPRECATED_NAMES_UNTIL REST
// responses and events carry the old names beside the new ones: rollout records get them as they
// are served (`withDeprecatedRolloutNames`); step records and guardrail firings, which the control
// plane sends on as stored, are written with both (`rollbacksFields`, `firingRollbacks`).
import type { GuardrailFiring } from './events.ts';
import type { LedgerStepIndex, RolloutRecord } from './rollouts.ts';
import type { RolledBackStepRecord, StepRecord } from './step-record.ts';

/** The last day REST responses and events carry the old names (docs/recipe.md "Renamed fields"). */
export const DEPRECATED_NAMES_UNTIL = '2027-06-30';

type JsonObject = Record<string, unknown>;

const isObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Moves `from` to `to` in `object` (a value already under `to` wins) and drops `from`. */
function rename(object: unknown, from: string, to: string, into: unknown = object): void {
  if (!isObject(object) || !(from in object)) return;
  if (isObject(into) && !(to in into)) into[to] = object[from];
  delete object[from];
}

/**
 * A rollout record as parsed from the ledger, under the current names: an older worker's
 * `rewards.base`, `rewards.preference`, `prompt.tokens` and `ratio.tokens` become
 * `rewards.baseReward`, `rewards.preferenceScore`, `lengths.prompt` and `ratio.generated`.
 * Mutates and returns `raw` (a freshly parsed value).
 */
export function upgradeRolloutRecord(raw: unknown): RolloutRecord {
  if (isObject(raw)) {
    rename(raw['rewards'], 'base', 'baseReward');
    rename(raw['rewards'], 'preference', 'preferenceScore');
    rename(raw['prompt'], 'tokens', 'prompt', raw['lengths']);
    rename(raw['ratio'], 'tokens', 'generated');
  }
  return raw as RolloutRecord;
}

/** A step's `index.json` as parsed, under the current names: version 1's `tokens` and
 * `generation` become `hasTokens` and `rollbacks` (version 2). Mutates and returns `raw`. */
export function upgradeLedgerIndex(raw: unknown): LedgerStepIndex {
  if (isObject(raw) && raw['version'] === 1) {
    rename(raw, 'tokens', 'hasTokens');
    rename(raw, 'generation', 'rollbacks');
    raw['version'] = 2;
  }
  return raw as LedgerStepIndex;
}

/** A rollout as REST responses send it until DEPRECATED_NAMES_UNTIL: the current names and,
 * beside them, the old ones with the same values. */
export function withDeprecatedRolloutNames<T extends Omit<RolloutRecord, 'tokens'>>(record: T): T {
  const { rewards, prompt, lengths, ratio } = record;
  return {
    ...record,
    prompt: { ...prompt, tokens: lengths.prompt },
    rewards: rewards && {
      ...rewards,
      base: rewards.baseReward,
      preference: rewards.preferenceScore,
    },
    ratio: ratio && { ...ratio, tokens: ratio.generated },
  };
}

/** The rollback count of a step record or `step:committed` event as written until
 * DEPRECATED_NAMES_UNTIL: `rollbacks` and its old name `generation`; none when 0. */
export function rollbacksFields(rollbacks: number): { rollbacks?: number; generation?: number } {
  return rollbacks > 0 ? { rollbacks, generation: rollbacks } : {};
}

/** A guardrail firing's rollback number as written until DEPRECATED_NAMES_UNTIL: `rollbacks`
 * and its old name `rollback`. */
export function firingRollbacks(rollbacks: number): { rollbacks: number; rollback: number } {
  return { rollbacks, rollback: rollbacks };
}

/** A step record as parsed from Redis under the current names: an older worker's `generation`
 * (and a rolled-back step's `rolledBack.rollback`) gives `rollbacks`; the old names stay until
 * DEPRECATED_NAMES_UNTIL. Mutates and returns `raw`. */
export function upgradeStepRecord<T extends StepRecord | RolledBackStepRecord | object>(raw: T): T {
  const record = raw as JsonObject;
  if (record['rollbacks'] === undefined && record['generation'] !== undefined) {
    record['rollbacks'] = record['generation'];
  }
  const rolledBack = record['rolledBack'];
  if (isObject(rolledBack) && rolledBack['rollbacks'] === undefined) {
    rolledBack['rollbacks'] = rolledBack['rollback'];
  }
  return raw;
}

/** Whether a stored step record's JSON needs `upgradeStepRecord`: it has the old top-level
 * `generation` and not `rollbacks` (the writer puts both before `metrics`). */
export function stepJsonNeedsUpgrade(json: string): boolean {
  const metrics = json.indexOf('"metrics":');
  const generation = json.indexOf('"generation":');
  return (
    generation !== -1 && generation < metrics && !json.slice(0, metrics).includes('"rollbacks":')
  );
}

/** A guardrail firing as parsed from the run record under the current names (an older worker's
 * `rollback` gives `rollbacks`). Mutates and returns `raw`. */
export function upgradeGuardrailFiring(raw: GuardrailFiring): GuardrailFiring {
  if (raw.rollbacks === undefined && raw.rollback !== undefined) raw.rollbacks = raw.rollback;
  return raw;
}
