// Per-step records: appended idempotently by step number, read back as history.
import {
  type StepCommittedEvent,
  type WireStepMetrics,
  StepRecord,
  parseStored,
  rollbacksFields,
  stepJsonNeedsUpgrade,
  upgradeStepRecord,
} from '@anneal/protocol';
import type { Redis } from 'ioredis';
import { type StoreContext, keys } from './context.ts';
import { acknowledged } from './durable.ts';
import { EVENTS_MAX_LEN, runScript } from './scripts.ts';
import { runJobKeyParts } from './run-job-key.ts';
import { type BudgetReached, type UsageReport, budgetReached, meterArgs } from './usage.ts';

export type AppendStepResult =
  /** `budget`: the run's or its tenant's cap is reached with this step's usage (usage.ts). */
  | { status: 'committed'; eventId: string; budget: BudgetReached }
  /** This step number was committed before; nothing changed. */
  | { status: 'duplicate' }
  | { status: 'missing' }
  /** Steps are only accepted while the run is running. */
  | { status: 'not-running'; state: string }
  /** The writer's attempt is no longer the run's (it lost the run): refused and counted. */
  | { status: 'fenced'; attempt: number; state: string }
  /** The run has no record of `previous` (Redis lost acknowledged steps in a failover): refused;
   * `lastStep` is the highest step it holds (null: none). */
  | { status: 'gap'; lastStep: number | null };

/** Write options: `attempt` fences the write to the attempt that started the run. */
export interface WriteOptions {
  now?: Date;
  attempt?: number;
}

export interface AppendStepOptions extends WriteOptions {
  /** A step this writer committed (or resumed after) before: refused as a `gap` when the run
   * no longer has it. */
  previous?: number;
  /** Rollbacks the run had taken when the step ran (guardrails.ts); 0 or absent: none. */
  rollbacks?: number;
  /** The step's usage and the attempt's slot time, metered with the commit (once per step). */
  usage?: UsageReport;
}

/** Commits step `step` once: a repeated step number is ignored, never duplicated. */
export async function appendStep(
  ctx: StoreContext,
  runId: string,
  step: number,
  metrics: WireStepMetrics,
  options: AppendStepOptions = {},
): Promise<AppendStepResult> {
  const now = options.now ?? new Date();
  if (!Number.isInteger(step) || step < 0)
    throw new Error(`step must be a non-negative integer, got ${step}`);
  const k = keys(ctx.prefix);
  const at = now.toISOString();
  const rollbacks = rollbacksFields(options.rollbacks ?? 0);
  // The committing attempt is kept with the record: it names the step's rollout-ledger copy.
  const attempt = options.attempt !== undefined ? { attempt: options.attempt } : {};
  const record: StepRecord = { step, ...rollbacks, ...attempt, metrics, at };
  const event: StepCommittedEvent = {
    type: 'step:committed',
    runId,
    step,
    ...rollbacks,
    metrics,
    at,
  };
  // Without a report the meter keys still name this run (the script always declares them).
  const meter = meterArgs(ctx, runId, options.usage ?? { tenant: '', at: now });
  const write = async (redis: Redis): Promise<AppendStepResult> => {
    const [status, extra, state, ...rest] = await runScript(
      redis,
      'annealAppendStep',
      [k.run(runId), k.steps(runId), k.stepIndex(runId), k.events(runId), ...meter.keys],
      [
        step,
        JSON.stringify(record),
        JSON.stringify(event),
        EVENTS_MAX_LEN,
        at,
        options.attempt ?? '',
        options.previous ?? '',
        ...meter.args,
        ...runJobKeyParts(ctx.prefix, runId),
      ],
    );
    if (status === 'committed') {
      return { status, eventId: extra ?? '', budget: budgetReached([state, ...rest]) };
    }
    if (status === 'fenced') return { status, attempt: Number(extra), state: state ?? '' };
    if (status === 'not-running') return { status, state: extra ?? '' };
    if (status === 'duplicate') return { status };
    if (status === 'gap') return { status, lastStep: extra ? Number(extra) : null };
    return { status: 'missing' };
  };
  // Sent again after a reconnect: `duplicate` then means this commit is there.
  return acknowledged(ctx, `step ${step} of run ${runId}`, write, (first, again) =>
    first.status === 'committed' && again.status === 'duplicate' ? first : again,
  );
}

export interface ReadStepsOptions {
  /** First step to return (inclusive). */
  fromStep?: number;
  /** Keep only these metric names. */
  names?: readonly string[];
  limit?: number;
}

/** Step records ordered by step number, as stored (JSON text of StepRecord): a reader that
 * sends them on need not parse them. Only a record an older worker wrote with `generation` alone
 * is parsed, to add `rollbacks` (renamed-fields.ts). At most `limit` (default 1,000, at most
 * 100,000). */
export async function readStepsJson(
  ctx: StoreContext,
  runId: string,
  options: Omit<ReadStepsOptions, 'names'> = {},
): Promise<string[]> {
  const { raw } = await readStepFields(ctx, runId, options);
  return raw
    .filter((entry): entry is string => entry !== null)
    .map((entry) =>
      stepJsonNeedsUpgrade(entry)
        ? JSON.stringify(parseStored(StepRecord, entry, `steps of run ${runId}`, upgradeStepRecord))
        : entry,
    );
}

/** The steps' hash fields from `fromStep` and their values (null: not in the hash). */
async function readStepFields(
  ctx: StoreContext,
  runId: string,
  options: Omit<ReadStepsOptions, 'names'>,
): Promise<{ steps: string[]; raw: (string | null)[] }> {
  const k = keys(ctx.prefix);
  const limit = Math.max(1, Math.min(options.limit ?? 1000, 100_000));
  const steps = await ctx.redis.zrangebyscore(
    k.stepIndex(runId),
    options.fromStep ?? 0,
    '+inf',
    'LIMIT',
    0,
    limit,
  );
  if (steps.length === 0) return { steps, raw: [] };
  return { steps, raw: await ctx.redis.hmget(k.steps(runId), ...steps) };
}

/** Step records ordered by step number. */
export async function readSteps(
  ctx: StoreContext,
  runId: string,
  options: ReadStepsOptions = {},
): Promise<StepRecord[]> {
  const { steps, raw } = await readStepFields(ctx, runId, options);
  const key = keys(ctx.prefix).steps(runId);
  const wanted = options.names && options.names.length > 0 ? new Set(options.names) : null;
  return raw
    .flatMap((entry, i) =>
      entry === null
        ? []
        : [parseStored(StepRecord, entry, () => `${key} ${steps[i]}`, upgradeStepRecord)],
    )
    .map((record) => (wanted ? onlyMetrics(record, wanted) : record));
}

/** The record with only the `wanted` metrics. */
export function onlyMetrics<T extends { metrics: Record<string, unknown> }>(
  record: T,
  wanted: ReadonlySet<string>,
): T {
  return {
    ...record,
    metrics: Object.fromEntries(Object.entries(record.metrics).filter(([n]) => wanted.has(n))),
  };
}

/** The run's committed step numbers, ascending: what a reader of the run's files keeps (an
 * attempt writes a step's files before committing it, so lines of an uncommitted step may be a
 * killed attempt's, answered again by the retry). */
export async function committedSteps(ctx: StoreContext, runId: string): Promise<number[]> {
  const steps = await ctx.redis.zrange(keys(ctx.prefix).stepIndex(runId), 0, -1);
  return steps.map(Number);
}

/** Each run's latest committed step record (null: none yet), in the order asked: a run's final
 * metrics, as a comparison shows them. */
export async function latestSteps(
  ctx: StoreContext,
  runIds: readonly string[],
): Promise<(StepRecord | null)[]> {
  if (runIds.length === 0) return [];
  const k = keys(ctx.prefix);
  const last = ctx.redis.pipeline();
  for (const id of runIds) last.zrevrange(k.stepIndex(id), 0, 0);
  const steps = ((await last.exec()) ?? []).map(([error, reply]) => {
    if (error) throw error;
    return (reply as string[])[0];
  });
  const read = ctx.redis.pipeline();
  const asked: string[] = [];
  for (const [i, id] of runIds.entries()) {
    const step = steps[i];
    if (step !== undefined) {
      read.hget(k.steps(id), step);
      asked.push(`${k.steps(id)} ${step}`);
    }
  }
  const records = ((await read.exec()) ?? []).map(([error, reply], i) => {
    if (error) throw error;
    return reply === null
      ? null
      : parseStored(StepRecord, reply as string, () => asked[i] ?? '', upgradeStepRecord);
  });
  let next = 0;
  return steps.map((step) => (step === undefined ? null : (records[next++] ?? null)));
}
