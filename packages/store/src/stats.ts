// Run statistics for metrics, kept by the Lua scripts of runs.ts/transitions.ts in the same
// atomic step as the change they describe:
// - `stats:runs`: hash `<state>/<kind>` -> how many runs are in that state now (anneal_runs);
// - `stats:transitions`: a capped stream with one entry per state change (`runId`, `kind`,
//   `pool`, `to`, and `waitedSeconds` on entering `running`), read through a consumer group so
//   that each entry is counted by exactly one control-plane replica
//   (anneal_runs_transitions_total, anneal_queue_wait_duration_seconds).
import type { Redis } from 'ioredis';
import { RUN_KINDS, RUN_STATES, type RunKind, type RunState } from '@anneal/protocol';
import { type StoreContext, keys } from './context.ts';

export interface RunCount {
  state: RunState;
  kind: RunKind;
  count: number;
}

const isState = (v: string): v is RunState => (RUN_STATES as readonly string[]).includes(v);
const isKind = (v: string): v is RunKind => (RUN_KINDS as readonly string[]).includes(v);

/**
 * Runs by state and kind (only combinations that ever had a run). Runs created before this
 * bookkeeping existed are not counted, so a count never goes below 0 here.
 */
export async function runCounts(ctx: StoreContext): Promise<RunCount[]> {
  const hash = await ctx.redis.hgetall(keys(ctx.prefix).runCounts());
  const out: RunCount[] = [];
  for (const [field, value] of Object.entries(hash)) {
    const [state = '', kind = ''] = field.split('/');
    if (isState(state) && isKind(kind))
      out.push({ state, kind, count: Math.max(0, Number(value)) });
  }
  return out;
}

export interface LoggedTransition {
  /** Stream entry id (for acknowledging). */
  id: string;
  runId: string;
  kind: RunKind;
  pool: string;
  to: RunState;
  /** Set when the run entered `running`: seconds since it was queued (or re-queued). */
  waitedSeconds?: number;
}

function parseEntry([id, flat]: [string, string[]]): LoggedTransition | null {
  const f: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) f[flat[i] ?? ''] = flat[i + 1] ?? '';
  const { runId, kind = '', pool, to = '' } = f;
  if (!runId || !pool || !isKind(kind) || !isState(to)) return null;
  const waited = f.waitedSeconds === undefined ? undefined : Number(f.waitedSeconds);
  return {
    id,
    runId,
    kind,
    pool,
    to,
    ...(waited !== undefined && Number.isFinite(waited) && { waitedSeconds: Math.max(0, waited) }),
  };
}

/** Creates the consumer group unless it exists; it starts at the oldest entry kept, so changes made before the first reader started are counted too. */
export async function ensureTransitionGroup(ctx: StoreContext, group: string): Promise<void> {
  try {
    await ctx.redis.xgroup('CREATE', keys(ctx.prefix).transitionLog(), group, '0', 'MKSTREAM');
  } catch (error) {
    if (!String(error).includes('BUSYGROUP')) throw error;
  }
}

/**
 * Up to `count` entries not yet delivered to any consumer of `group`, waiting up to `blockMs`.
 * Needs a connection of its own (XREADGROUP BLOCK). Malformed entries are returned as ids in
 * `skipped` so they can be acknowledged too.
 */
export async function readTransitions(
  blockingClient: Redis,
  prefix: string,
  group: string,
  consumer: string,
  blockMs: number,
  count = 500,
): Promise<{ entries: LoggedTransition[]; ids: string[] }> {
  const reply = (await blockingClient.xreadgroup(
    'GROUP',
    group,
    consumer,
    'COUNT',
    count,
    'BLOCK',
    blockMs,
    'STREAMS',
    keys(prefix).transitionLog(),
    '>',
  )) as Array<[string, Array<[string, string[]]>]> | null;
  const raw = reply?.[0]?.[1] ?? [];
  return {
    entries: raw.map(parseEntry).filter((e): e is LoggedTransition => e !== null),
    ids: raw.map(([id]) => id),
  };
}

/** Takes over entries another consumer read but never acknowledged (it died) for `minIdleMs`. */
export async function claimStaleTransitions(
  ctx: StoreContext,
  group: string,
  consumer: string,
  minIdleMs: number,
  count = 500,
): Promise<{ entries: LoggedTransition[]; ids: string[] }> {
  const reply = (await ctx.redis.xautoclaim(
    keys(ctx.prefix).transitionLog(),
    group,
    consumer,
    minIdleMs,
    '0-0',
    'COUNT',
    count,
  )) as [string, Array<[string, string[]] | null>, ...unknown[]];
  const raw = (reply[1] ?? []).filter((e): e is [string, string[]] => e !== null);
  return {
    entries: raw.map(parseEntry).filter((e): e is LoggedTransition => e !== null),
    ids: raw.map(([id]) => id),
  };
}

export async function ackTransitions(
  ctx: StoreContext,
  group: string,
  ids: readonly string[],
): Promise<void> {
  if (ids.length > 0) await ctx.redis.xack(keys(ctx.prefix).transitionLog(), group, ...ids);
}
