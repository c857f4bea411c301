// Run records: create (with Idempotency-Key handling), get, list with filters and cursor.
import { createHash } from 'node:crypto';
import {
  type AdapterDemand,
  type RunEvent,
  type RunKind,
  type RunResource,
  type RunSpec,
  type RunState,
  Transition,
  parseStored,
} from '@anneal/protocol';
import { Type } from '@sinclair/typebox';
import type { Redis } from 'ioredis';
import { type StoreContext, keys } from './context.ts';
import { acknowledged } from './durable.ts';
import { newRunId } from './ids.ts';
import { newRunFields, runFromHash } from './run-record.ts';
import { EVENTS_MAX_LEN, runScript } from './scripts.ts';

export const DEFAULT_IDEMPOTENCY_TTL_SECONDS = 24 * 60 * 60;

export interface NewRun {
  tenant: string;
  /** A validated spec with its pool resolved (protocol `resolveRunSpec`). */
  spec: RunSpec & { pool: string };
  idempotency?: {
    key: string;
    /** Hash of the request body; the same key with another hash is a conflict. */
    bodyHash: string;
    ttlSeconds?: number;
  };
  now?: Date;
  /** Override the generated id (tests; a fork, which takes a use of its source checkpoint
   * under the id before the run exists). */
  id?: string;
  /** The run and step a fork's weights start from (kept on the record as `parent`). */
  parent?: { run: string; step: number };
  /** Adapter slots the run holds per endpoint while running (protocol `runAdapterDemand`). */
  adapterDemand?: readonly AdapterDemand[];
}

export type CreateRunResult =
  | { status: 'created'; run: RunResource }
  | { status: 'existing'; run: RunResource }
  | { status: 'conflict'; runId: string };

/** What an idempotency key holds: the run it created and the body it was created with. */
const IdempotencyRecord = Type.Object({ runId: Type.String(), bodyHash: Type.String() });

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * Creates a queued run atomically: record, history, event, indexes, idempotency key, and an
 * outbox entry saying its BullMQ job is still to be added (`listOutbox` / `clearOutbox`).
 */
export async function createRun(ctx: StoreContext, input: NewRun): Promise<CreateRunResult> {
  const k = keys(ctx.prefix);
  const now = input.now ?? new Date();
  const nowIso = now.toISOString();
  const id = input.id ?? newRunId(now.getTime());
  const idem = input.idempotency;
  const transition: Transition = { from: null, to: 'queued', at: nowIso, reason: 'submitted' };
  const event: RunEvent = { type: 'run:state', runId: id, ...transition };
  const fields = newRunFields({
    id,
    tenant: input.tenant,
    spec: input.spec,
    nowIso,
    ...(idem && { idempotencyKey: idem.key }),
    ...(input.parent && { parent: input.parent }),
    ...(input.adapterDemand && { adapterDemand: input.adapterDemand }),
  });
  const write = (redis: Redis) =>
    runScript(
      redis,
      'annealCreateRun',
      [
        k.run(id),
        k.transitions(id),
        k.events(id),
        k.tenantRuns(input.tenant),
        k.poolWaiting(input.spec.pool),
        // Without a key the script never touches this key; skip hashing for it.
        k.idempotency(input.tenant, idem ? sha256(idem.key) : 'none'),
        k.runCounts(),
        k.transitionLog(),
        k.outbox(),
      ],
      [
        id,
        now.getTime(),
        JSON.stringify(transition),
        JSON.stringify(event),
        idem ? '1' : '0',
        JSON.stringify({ runId: id, bodyHash: idem?.bodyHash ?? '' }),
        idem?.ttlSeconds ?? DEFAULT_IDEMPOTENCY_TTL_SECONDS,
        EVENTS_MAX_LEN,
        ...Object.entries(fields).flat(),
      ],
    );
  // Sent again after a reconnect, the script finds the run it created (or its idempotency key).
  const reply = await acknowledged(ctx, `submission of run ${id}`, write, (first, again) =>
    first[0] === 'created' && (again[0] === 'duplicate' || again[0] === 'existing') ? first : again,
  );
  if (reply[0] === 'existing') {
    const previous = parseStored(
      IdempotencyRecord,
      reply[1] ?? '{}',
      k.idempotency(input.tenant, idem ? sha256(idem.key) : 'none'),
    );
    if (previous.bodyHash !== idem?.bodyHash) return { status: 'conflict', runId: previous.runId };
    const run = await getRun(ctx, previous.runId);
    if (!run) throw new Error(`idempotency key points at missing run ${previous.runId}`);
    return { status: 'existing', run };
  }
  if (reply[0] !== 'created') throw new Error(`run id collision: ${id}`);
  // The record is exactly what the script wrote: no read-back round trip.
  const run = runFromHash(fields);
  if (!run) throw new Error(`run ${id}: empty record`);
  return { status: 'created', run };
}

export interface GetRunOptions {
  /** Only return the run if it belongs to this tenant. */
  tenant?: string;
  /** Include the transition history. */
  transitions?: boolean;
}

export async function getRun(
  ctx: StoreContext,
  runId: string,
  options: GetRunOptions = {},
): Promise<RunResource | null> {
  const k = keys(ctx.prefix);
  const [hash, history] = await Promise.all([
    ctx.redis.hgetall(k.run(runId)),
    options.transitions ? getTransitions(ctx, runId) : Promise.resolve(undefined),
  ]);
  const run = runFromHash(hash, history);
  if (!run || (options.tenant !== undefined && run.tenant !== options.tenant)) return null;
  return run;
}

export async function getTransitions(ctx: StoreContext, runId: string): Promise<Transition[]> {
  const key = keys(ctx.prefix).transitions(runId);
  const raw = await ctx.redis.lrange(key, 0, -1);
  return raw.map((entry, i) => parseStored(Transition, entry, `${key}[${i}]`));
}

export interface ListRunsOptions {
  tenant: string;
  state?: RunState;
  kind?: RunKind;
  /** All must match. */
  labels?: Record<string, string>;
  limit?: number;
  /** `nextCursor` of the previous page. */
  cursor?: string;
}

export interface RunPage {
  runs: RunResource[];
  nextCursor: string | null;
}

function matches(run: RunResource, options: ListRunsOptions): boolean {
  if (options.state && run.state !== options.state) return false;
  if (options.kind && run.kind !== options.kind) return false;
  return Object.entries(options.labels ?? {}).every(([key, value]) => run.labels[key] === value);
}

/** Newest first. Scans the tenant's index in batches, filtering, up to a bounded scan. */
export async function listRuns(ctx: StoreContext, options: ListRunsOptions): Promise<RunPage> {
  const limit = Math.max(1, Math.min(options.limit ?? 50, 500));
  const maxScanned = limit * 20 + 1000;
  const index = keys(ctx.prefix).tenantRuns(options.tenant);
  const runs: RunResource[] = [];
  let upper = options.cursor ? `(${options.cursor}` : '+';
  let scanned = 0;
  while (runs.length < limit && scanned < maxScanned) {
    const batchSize = Math.min(Math.max(limit * 2, 50), 500);
    const ids = await ctx.redis.zrevrangebylex(index, upper, '-', 'LIMIT', 0, batchSize);
    if (ids.length === 0) return { runs, nextCursor: null };
    const pipeline = ctx.redis.pipeline();
    for (const id of ids) pipeline.hgetall(keys(ctx.prefix).run(id));
    const hashes = (await pipeline.exec()) ?? [];
    for (const [i, [, hash]] of hashes.entries()) {
      scanned += 1;
      upper = `(${ids[i]}`;
      const run = runFromHash((hash ?? {}) as Record<string, string>);
      if (run && matches(run, options)) runs.push(run);
      if (runs.length === limit) break;
    }
    if (ids.length < batchSize && runs.length < limit) return { runs, nextCursor: null };
  }
  return { runs, nextCursor: upper.slice(1) };
}

/** Ids of a pool's waiting (queued or retrying) runs, longest waiting first. */
export async function listWaitingRuns(ctx: StoreContext, pool: string): Promise<string[]> {
  return ctx.redis.zrange(keys(ctx.prefix).poolWaiting(pool), 0, -1);
}

/** Runs whose job may not be in BullMQ yet, recorded at least `minAgeMs` ago (transactional outbox). */
export async function listOutbox(
  ctx: StoreContext,
  minAgeMs = 0,
  now: Date = new Date(),
): Promise<string[]> {
  return ctx.redis.zrangebyscore(
    keys(ctx.prefix).outbox(),
    '-inf',
    now.getTime() - minAgeMs,
    'LIMIT',
    0,
    1000,
  );
}

/** These runs' jobs are in BullMQ (or the runs no longer need one): one ZREM for all of them. */
export async function clearOutbox(ctx: StoreContext, ...runIds: string[]): Promise<void> {
  if (runIds.length > 0) await ctx.redis.zrem(keys(ctx.prefix).outbox(), ...runIds);
}
