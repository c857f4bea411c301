// Sweep records (docs/api.md "Sweeps"): one JSON value per sweep, the tenant's sweep index
// (newest first, paged like runs) and Idempotency-Keys; the sweep's runs are ordinary runs whose
// ids the record lists, in grid order. Created by one Lua script (record, index and key together).
import { createHash } from 'node:crypto';
import { type RunState, RunKindSchema, SweepSelect, parseStored } from '@anneal/protocol';
import { type Static, Type } from '@sinclair/typebox';
import type { Redis } from 'ioredis';
import { type StoreContext, keys } from './context.ts';
import { acknowledged } from './durable.ts';
import { DEFAULT_IDEMPOTENCY_TTL_SECONDS } from './runs.ts';
import { runScript } from './scripts.ts';

/** A sweep as stored (JSON under its key): checked when read (parseStored). */
export const SweepRecord = Type.Object({
  id: Type.String(),
  tenant: Type.String(),
  name: Type.Optional(Type.String()),
  labels: Type.Record(Type.String(), Type.String()),
  kind: RunKindSchema,
  createdAt: Type.String(),
  grid: Type.Record(Type.String(), Type.Array(Type.Unknown())),
  select: Type.Optional(SweepSelect),
  budget: Type.Optional(Type.Object({ maxUsd: Type.Number(), perRunUsd: Type.Number() })),
  /** The sweep's runs in grid order: their ids (chosen before they exist) and grid values. */
  runs: Type.Array(
    Type.Object({ id: Type.String(), values: Type.Record(Type.String(), Type.Unknown()) }),
  ),
});
export type SweepRecord = Static<typeof SweepRecord>;

const SweepIdempotency = Type.Object({ sweepId: Type.String(), bodyHash: Type.String() });

export type CreateSweepResult =
  { status: 'created' | 'existing'; sweep: SweepRecord } | { status: 'conflict'; sweepId: string };

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** Writes a new sweep; with an Idempotency-Key, a replay returns the sweep the key first made
 * (a different body hash: a conflict). Its runs are created after, by the caller. */
export async function createSweep(
  ctx: StoreContext,
  sweep: SweepRecord,
  idempotency?: { key: string; bodyHash: string; ttlSeconds?: number },
): Promise<CreateSweepResult> {
  const k = keys(ctx.prefix);
  const write = (redis: Redis) =>
    runScript(
      redis,
      'annealCreateSweep',
      [
        k.sweep(sweep.id),
        k.tenantSweeps(sweep.tenant),
        k.sweepIdempotency(sweep.tenant, idempotency ? sha256(idempotency.key) : 'none'),
      ],
      [
        sweep.id,
        JSON.stringify(sweep),
        idempotency ? '1' : '0',
        JSON.stringify({ sweepId: sweep.id, bodyHash: idempotency?.bodyHash ?? '' }),
        idempotency?.ttlSeconds ?? DEFAULT_IDEMPOTENCY_TTL_SECONDS,
      ],
    );
  const reply = await acknowledged(ctx, `submission of sweep ${sweep.id}`, write, (first, again) =>
    first[0] === 'created' && (again[0] === 'duplicate' || again[0] === 'existing') ? first : again,
  );
  if (reply[0] === 'existing') {
    const previous = parseStored(
      SweepIdempotency,
      reply[1] ?? '{}',
      `idempotency key of sweep ${sweep.id}`,
    );
    if (previous.bodyHash !== idempotency?.bodyHash) {
      return { status: 'conflict', sweepId: previous.sweepId };
    }
    const existing = await getSweep(ctx, previous.sweepId);
    if (!existing) throw new Error(`idempotency key points at missing sweep ${previous.sweepId}`);
    return { status: 'existing', sweep: existing };
  }
  if (reply[0] !== 'created') throw new Error(`sweep id collision: ${sweep.id}`);
  return { status: 'created', sweep };
}

/** The sweep, or null when there is none (or it is another tenant's). */
export async function getSweep(
  ctx: StoreContext,
  id: string,
  options: { tenant?: string } = {},
): Promise<SweepRecord | null> {
  const key = keys(ctx.prefix).sweep(id);
  const raw = await ctx.redis.get(key);
  if (raw === null) return null;
  const sweep = parseStored(SweepRecord, raw, key);
  return options.tenant !== undefined && sweep.tenant !== options.tenant ? null : sweep;
}

export interface SweepPage {
  sweeps: SweepRecord[];
  nextCursor: string | null;
}

/** The tenant's sweeps, newest first, `limit` a page (1-200); `cursor`: the previous page's
 * `nextCursor`. */
export async function listSweeps(
  ctx: StoreContext,
  options: { tenant: string; limit?: number; cursor?: string },
): Promise<SweepPage> {
  const limit = Math.max(1, Math.min(options.limit ?? 50, 200));
  const k = keys(ctx.prefix);
  const upper = options.cursor ? `(${options.cursor}` : '+';
  const ids = await ctx.redis.zrevrangebylex(
    k.tenantSweeps(options.tenant),
    upper,
    '-',
    'LIMIT',
    0,
    limit + 1,
  );
  const page = ids.slice(0, limit);
  const raw = page.length > 0 ? await ctx.redis.mget(...page.map((id) => k.sweep(id))) : [];
  const sweeps = raw.flatMap((r, i) =>
    r === null ? [] : [parseStored(SweepRecord, r, () => k.sweep(page[i] ?? ''))],
  );
  return { sweeps, nextCursor: ids.length > limit ? (page.at(-1) ?? null) : null };
}

/** Each run's state and last committed step (absent runs: null), in the order asked: what a
 * sweep's summary needs, without reading the runs' specs. */
export async function runStates(
  ctx: StoreContext,
  runIds: readonly string[],
): Promise<({ state: RunState; lastStep?: number } | null)[]> {
  if (runIds.length === 0) return [];
  const k = keys(ctx.prefix);
  const pipeline = ctx.redis.pipeline();
  for (const id of runIds) pipeline.hmget(k.run(id), 'state', 'lastStep');
  const replies = (await pipeline.exec()) ?? [];
  return replies.map(([error, reply]) => {
    if (error) throw error;
    const [state, lastStep] = reply as [string | null, string | null];
    if (state === null) return null;
    return { state: state as RunState, ...(lastStep !== null && { lastStep: Number(lastStep) }) };
  });
}
