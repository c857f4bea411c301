// Reading a run's checkpoint catalogue (`run:<id>:checkpoints`, written by checkpoints.ts) a page
// at a time: the steps are indexed in two sorted sets scored by step (`…:checkpoints:kept`,
// `…:checkpoints:deleted`), so a page ranges over at most `limit + 1` steps of each, whatever the
// run's length; deleted entries are stored compacted (step, at, paths, deletedAt) and counted in a
// summary. Each entry carries its step record's metrics and the runs that start from it.
import {
  type CheckpointEntry,
  CheckpointProtection,
  WireStepMetrics,
  checkStored,
  parseStored,
} from '@anneal/protocol';
import { type Static, Type } from '@sinclair/typebox';
import { type StoreContext, keys } from './context.ts';
import { runScript } from './scripts.ts';

/** What a catalogue entry stores (the rest of CheckpointEntry is derived when it is read). */
const StoredEntry = Type.Object({
  step: Type.Integer({ minimum: 0 }),
  at: Type.String(),
  path: Type.String(),
  samplerPath: Type.Optional(Type.String()),
  deletedAt: Type.Optional(Type.String()),
  protections: Type.Optional(Type.Array(CheckpointProtection)),
});
export type StoredEntry = Static<typeof StoredEntry>;

/** A use of a checkpoint by another run (`…:checkpoint-uses`, keyed by the user run). */
const CheckpointUse = Type.Object({ step: Type.Integer({ minimum: 0 }) });

/** The step record's metrics, all a catalogue entry takes of it. */
const StepMetrics = Type.Object({ metrics: WireStepMetrics });

/** A catalogue entry as stored; `source` names it in errors (the key and the step). */
export function parseCatalogueEntry(raw: string, source: string): StoredEntry {
  const entry = parseStored(Type.Object({}), raw, source) as Record<string, unknown>;
  // Lua's cjson writes an empty array as {}.
  if (!Array.isArray(entry.protections)) delete entry.protections;
  return checkStored(StoredEntry, entry, source);
}

export type CheckpointStatusFilter = 'kept' | 'deleted' | 'all';

export interface CheckpointQuery {
  status: CheckpointStatusFilter;
  /** Steps from..to, inclusive (either open). */
  from?: number;
  to?: number;
  order: 'asc' | 'desc';
  /** Entries after this step in `order` only (the last step of the previous page). */
  after?: number;
  limit: number;
}

export interface CheckpointPage {
  checkpoints: CheckpointEntry[];
  /** Whether entries follow the last one of this page. */
  more: boolean;
}

export interface CatalogueSummary {
  /** The resume point's step (null: never checkpointed). */
  latest: number | null;
  kept: number;
  deleted: { count: number; firstStep: number | null; lastStep: number | null };
}

/** Indexes a catalogue its step indexes do not count (written before they existed, or by an
 * older worker during an upgrade); O(1) when they do. */
async function ensureIndexed(ctx: StoreContext, runId: string): Promise<void> {
  const k = keys(ctx.prefix);
  await runScript(
    ctx.redis,
    'annealIndexCheckpoints',
    [k.checkpoints(runId), k.checkpointsKept(runId), k.checkpointsDeleted(runId)],
    [],
  );
}

/** Up to `count` steps of one index within the query's range, after `query.after`. */
async function rangeSteps(
  ctx: StoreContext,
  key: string,
  query: CheckpointQuery,
  count: number,
): Promise<number[]> {
  let low = query.from === undefined ? '-inf' : String(query.from);
  let high = query.to === undefined ? '+inf' : String(query.to);
  if (query.after !== undefined) {
    if (query.order === 'asc' && (query.from === undefined || query.after >= query.from)) {
      low = `(${query.after}`;
    }
    if (query.order === 'desc' && (query.to === undefined || query.after <= query.to)) {
      high = `(${query.after}`;
    }
  }
  const members =
    query.order === 'asc'
      ? await ctx.redis.zrangebyscore(key, low, high, 'LIMIT', 0, count)
      : await ctx.redis.zrevrangebyscore(key, high, low, 'LIMIT', 0, count);
  return members.map(Number);
}

/** One page of the catalogue in step order: at most `limit` entries, each read whole. */
export async function listCheckpoints(
  ctx: StoreContext,
  runId: string,
  query: CheckpointQuery,
): Promise<CheckpointPage> {
  await ensureIndexed(ctx, runId);
  const k = keys(ctx.prefix);
  const want = query.limit + 1;
  const [kept, deleted] = await Promise.all([
    query.status === 'deleted' ? [] : rangeSteps(ctx, k.checkpointsKept(runId), query, want),
    query.status === 'kept' ? [] : rangeSteps(ctx, k.checkpointsDeleted(runId), query, want),
  ]);
  const steps = [...kept, ...deleted]
    .sort((a, b) => (query.order === 'asc' ? a - b : b - a))
    .slice(0, want);
  const page = steps.slice(0, query.limit);
  return { checkpoints: await readEntries(ctx, runId, page), more: steps.length > page.length };
}

/** Every kept checkpoint, oldest first (retention ranks them all; a policy bounds how many). */
export async function listKeptCheckpoints(
  ctx: StoreContext,
  runId: string,
): Promise<CheckpointEntry[]> {
  await ensureIndexed(ctx, runId);
  const steps = await ctx.redis.zrange(keys(ctx.prefix).checkpointsKept(runId), 0, -1);
  return readEntries(ctx, runId, steps.map(Number));
}

/** The catalogue's counts and the resume point, in O(1) of the run's length. */
export async function checkpointSummary(
  ctx: StoreContext,
  runId: string,
): Promise<CatalogueSummary> {
  await ensureIndexed(ctx, runId);
  const k = keys(ctx.prefix);
  const deletedKey = k.checkpointsDeleted(runId);
  const [kept, deleted, first, last, latest] = await Promise.all([
    ctx.redis.zcard(k.checkpointsKept(runId)),
    ctx.redis.zcard(deletedKey),
    ctx.redis.zrange(deletedKey, 0, 0),
    ctx.redis.zrange(deletedKey, -1, -1),
    ctx.redis.hget(k.run(runId), 'checkpointStep'),
  ]);
  const step = (members: string[]) => (members[0] === undefined ? null : Number(members[0]));
  return {
    latest: latest === null ? null : Number(latest),
    kept,
    deleted: { count: deleted, firstStep: step(first), lastStep: step(last) },
  };
}

/** One entry, whole, or null when the run never recorded that step. */
export async function getCheckpointEntry(
  ctx: StoreContext,
  runId: string,
  step: number,
): Promise<CheckpointEntry | null> {
  const [entry] = await readEntries(ctx, runId, [step]);
  return entry ?? null;
}

/** One catalogue entry (without metrics or uses), or null when the run never recorded it. */
export async function getCatalogueEntry(
  ctx: StoreContext,
  runId: string,
  step: number,
): Promise<{ step: number; path: string; samplerPath?: string; deleted: boolean } | null> {
  const key = keys(ctx.prefix).checkpoints(runId);
  const raw = await ctx.redis.hget(key, String(step));
  if (raw === null) return null;
  const e = parseCatalogueEntry(raw, `${key} ${step}`);
  return {
    step: e.step,
    path: e.path,
    ...(e.samplerPath !== undefined && { samplerPath: e.samplerPath }),
    deleted: e.deletedAt !== undefined,
  };
}

/** The entries of `steps` (in that order; steps not catalogued are left out), with their step
 * records' metrics and the runs that start from them. */
async function readEntries(
  ctx: StoreContext,
  runId: string,
  steps: readonly number[],
): Promise<CheckpointEntry[]> {
  if (steps.length === 0) return [];
  const k = keys(ctx.prefix);
  const fields = steps.map(String);
  const [raws, records, uses, latest] = await Promise.all([
    ctx.redis.hmget(k.checkpoints(runId), ...fields),
    ctx.redis.hmget(k.steps(runId), ...fields),
    ctx.redis.hgetall(k.checkpointUses(runId)),
    ctx.redis.hget(k.run(runId), 'checkpointStep'),
  ]);
  const usedBy = new Map<number, string[]>();
  for (const [user, raw] of Object.entries(uses)) {
    const { step } = parseStored(CheckpointUse, raw, `${k.checkpointUses(runId)} ${user}`);
    usedBy.set(step, [...(usedBy.get(step) ?? []), user]);
  }
  const entries: CheckpointEntry[] = [];
  raws.forEach((raw, i) => {
    if (raw === null) return;
    const e = parseCatalogueEntry(raw, `${k.checkpoints(runId)} ${fields[i]}`);
    const record = records[i];
    const metrics = record
      ? parseStored(StepMetrics, record, `${k.steps(runId)} ${fields[i]}`)
      : null;
    entries.push({
      step: e.step,
      at: e.at,
      path: e.path,
      ...(e.samplerPath !== undefined && { samplerPath: e.samplerPath }),
      status: e.deletedAt === undefined ? 'kept' : 'deleted',
      ...(e.deletedAt !== undefined && { deletedAt: e.deletedAt }),
      latest: latest !== null && Number(latest) === e.step,
      protections: e.protections ?? [],
      usedBy: (usedBy.get(e.step) ?? []).sort(),
      metrics: metrics?.metrics ?? null,
    });
  });
  return entries;
}
