// Guardrail writes (docs/guardrails.md): firings recorded once each on the run's stream and its
// record, the safe checkpoint (the last one at which no rule held: what a rollback restores, and
// what checkpoint retention must keep), and a rollback. A rollback takes back every committed
// step above the restored checkpoint into the rolled-back hash (kept and marked, never
// overwritten) and moves the checkpoint pointer back, in one script: a worker killed at any
// point leaves either the run before the rollback or the run after it, never half of one.
import {
  GUARDRAIL_FIRINGS_KEPT,
  type GuardrailFiredEvent,
  GuardrailFiring,
  type GuardrailState,
  RolledBackStepRecord,
  type StepRecord,
  firingRollbacks,
  parseStored,
  upgradeGuardrailFiring,
  upgradeStepRecord,
} from '@anneal/protocol';
import { Type } from '@sinclair/typebox';
import { type StoreContext, keys } from './context.ts';
import { acknowledged } from './durable.ts';
import { EVENTS_MAX_LEN, runScript } from './scripts.ts';
import { type UsageReport, meterArgs } from './usage.ts';
import type { WriteOptions } from './steps.ts';

export type GuardrailWriteResult =
  | { status: 'recorded' | 'duplicate' | 'missing' }
  | { status: 'fenced'; attempt: number; state: string };

const firedEvent = (runId: string, firing: GuardrailFiring): GuardrailFiredEvent => ({
  type: 'guardrail:fired',
  runId,
  ...firing,
});

/** `ok`: the script's word for a write done (reported as `recorded`). */
function fencedOr(reply: string[], ok: string): GuardrailWriteResult {
  const [status, attempt, state] = reply;
  if (status === 'fenced') return { status, attempt: Number(attempt), state: state ?? '' };
  if (status === ok) return { status: 'recorded' };
  if (status === 'duplicate') return { status };
  return { status: 'missing' };
}

/**
 * Records the firings of one step (notify, pause, stop; a rollback records its own, rollbackRun)
 * as `guardrail:fired` events and on the run record. `key` (`<rollbacks>:<step>`) makes a re-sent
 * write, or the same step re-run after a worker restart, a `duplicate`.
 */
export async function recordGuardrailFirings(
  ctx: StoreContext,
  runId: string,
  key: string,
  firings: readonly GuardrailFiring[],
  options: WriteOptions = {},
  /** A stop's: the usage of the step that fired (never committed), metered once with it. */
  usage?: UsageReport,
): Promise<GuardrailWriteResult> {
  const k = keys(ctx.prefix);
  const meter = meterArgs(ctx, runId, usage ?? { tenant: '', at: new Date() });
  const reply = await acknowledged(ctx, `guardrail firings ${key} of run ${runId}`, (redis) =>
    runScript(
      redis,
      'annealRecordFirings',
      [k.run(runId), k.events(runId), k.firings(runId), k.firingKeys(runId), ...meter.keys],
      [
        options.attempt ?? '',
        key,
        JSON.stringify(firings.map((f) => JSON.stringify(f))),
        JSON.stringify(firings.map((f) => JSON.stringify(firedEvent(runId, f)))),
        EVENTS_MAX_LEN,
        GUARDRAIL_FIRINGS_KEPT,
        ...meter.args,
      ],
    ),
  );
  return fencedOr(reply, 'recorded');
}

/** The last checkpoint at which no rule held (`path` null: the run's starting weights). */
export async function setSafeCheckpoint(
  ctx: StoreContext,
  runId: string,
  checkpoint: { step: number; path: string | null },
  options: WriteOptions = {},
): Promise<GuardrailWriteResult> {
  const reply = await acknowledged(ctx, `safe checkpoint of run ${runId}`, (redis) =>
    runScript(
      redis,
      'annealSetSafeCheckpoint',
      [keys(ctx.prefix).run(runId)],
      [options.attempt ?? '', checkpoint.step, checkpoint.path ?? ''],
    ),
  );
  return fencedOr(reply, 'saved');
}

export interface RollbackInput {
  /** `<rollbacks>:<step>` of the firing step, as recordGuardrailFirings. */
  key: string;
  /** The firing, with `restored`, `rollbacks` (n) and `learningRateScale` set; the store fills
   * `rolledBackSteps`. */
  firing: GuardrailFiring & { restored: { step: number; path: string | null }; rollbacks: number };
  /** The step that fired, as it ran (never committed; non-finite values as null). */
  fired: StepRecord;
  /** The fired step's usage and the attempt's slot time, metered with the rollback (once). */
  usage?: UsageReport;
  workerId?: string;
  now?: Date;
}

export type RollbackResult =
  | { status: 'rolled-back'; rolledBackSteps: number[] }
  /** This rollback (n) is already there: a re-sent write, or an attempt that resumed after it. */
  | { status: 'duplicate' }
  | { status: 'missing' }
  | { status: 'not-running'; state: string }
  | { status: 'stale'; rollbacks: number }
  | { status: 'fenced'; attempt: number; state: string };

/** Takes the run back to `firing.restored` as its n-th rollback (see the file comment). */
export async function rollbackRun(
  ctx: StoreContext,
  runId: string,
  input: RollbackInput,
  options: WriteOptions = {},
): Promise<RollbackResult> {
  const k = keys(ctx.prefix);
  const at = (input.now ?? new Date()).toISOString();
  const { restored, rollbacks } = input.firing;
  // Only this attempt writes the run's steps (fenced), so the steps read here are the ones the
  // script takes back.
  const above = await ctx.redis.zrangebyscore(k.stepIndex(runId), `(${restored.step}`, '+inf');
  // until DEPRECATED_NAMES_UNTIL the firing also carries `rollbacks` as `rollback`
  const firing: GuardrailFiring = {
    ...input.firing,
    ...firingRollbacks(rollbacks),
    rolledBackSteps: above.map(Number),
    at,
  };
  const marker = (fired: boolean) => ({ ...firingRollbacks(rollbacks), at, fired });
  const fired: RolledBackStepRecord = { ...input.fired, rolledBack: marker(true) };
  const transition = {
    from: 'running',
    to: 'running',
    at,
    reason: firing.reason,
    ...(input.workerId !== undefined && { workerId: input.workerId }),
  };
  const meter = meterArgs(ctx, runId, input.usage ?? { tenant: '', at: new Date(at) });
  const reply = await acknowledged(ctx, `rollback ${rollbacks} of run ${runId}`, (redis) =>
    runScript(
      redis,
      'annealRollback',
      [
        k.run(runId),
        k.events(runId),
        k.firings(runId),
        k.firingKeys(runId),
        k.steps(runId),
        k.stepIndex(runId),
        k.rolledBackSteps(runId),
        k.transitions(runId),
        ...meter.keys,
      ],
      [
        options.attempt ?? '',
        input.key,
        JSON.stringify(firing),
        JSON.stringify(firedEvent(runId, firing)),
        EVENTS_MAX_LEN,
        GUARDRAIL_FIRINGS_KEPT,
        restored.step,
        restored.path ?? '',
        rollbacks,
        firing.learningRateScale ?? 1,
        input.fired.step,
        JSON.stringify(fired),
        JSON.stringify(marker(false)),
        at,
        JSON.stringify(transition),
        ...meter.args,
      ],
    ),
  );
  const [status, extra, state] = reply;
  switch (status) {
    case 'rolled-back':
      return { status, rolledBackSteps: firing.rolledBackSteps ?? [] };
    case 'duplicate':
      return { status };
    case 'not-running':
      return { status, state: extra ?? '' };
    case 'stale':
      return { status, rollbacks: Number(extra) };
    case 'fenced':
      return { status, attempt: Number(extra), state: state ?? '' };
    default:
      return { status: 'missing' };
  }
}

/** Steps guardrail rollbacks took back, by step, then rollback (the firing step last). */
export async function readRolledBackSteps(
  ctx: StoreContext,
  runId: string,
): Promise<RolledBackStepRecord[]> {
  const key = keys(ctx.prefix).rolledBackSteps(runId);
  const raw = await ctx.redis.hgetall(key);
  return Object.entries(raw)
    .map(([field, entry]) =>
      parseStored(RolledBackStepRecord, entry, `${key} ${field}`, upgradeStepRecord),
    )
    .sort(
      (a, b) =>
        a.step - b.step ||
        a.rolledBack.rollbacks - b.rolledBack.rollbacks ||
        Number(a.rolledBack.fired) - Number(b.rolledBack.fired),
    );
}

const GuardrailFirings = Type.Array(GuardrailFiring);
/** Firings an older worker wrote (`rollback` only) under the current names. */
const upgradeFirings = (value: object): unknown =>
  Array.isArray(value)
    ? value.map((f: unknown) =>
        typeof f === 'object' && f !== null ? upgradeGuardrailFiring(f as GuardrailFiring) : f,
      )
    : value;

/** The run record's guardrail fields (undefined when the guardrails never wrote any); `source`
 * names the record in errors. */
export function guardrailStateFromHash(
  hash: Record<string, string>,
  source: string,
): GuardrailState | undefined {
  const { rollbacks, learningRateScale, safeCheckpointStep, safeCheckpointPath } = hash;
  const firings = hash.guardrailFirings;
  if (rollbacks === undefined && safeCheckpointStep === undefined && firings === undefined) {
    return undefined;
  }
  return {
    rollbacks: Number(rollbacks ?? 0),
    learningRateScale: Number(learningRateScale ?? 1),
    ...(safeCheckpointStep !== undefined && {
      safeCheckpoint: { step: Number(safeCheckpointStep), path: safeCheckpointPath || null },
    }),
    firings:
      firings === undefined
        ? []
        : parseStored(GuardrailFirings, firings, `${source} guardrailFirings`, upgradeFirings),
  };
}
