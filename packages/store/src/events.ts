// Per-run event stream (Redis Streams). Stream ids are SSE ids: resume after `Last-Event-ID`.
import type { Redis } from 'ioredis';
import { RunEvent, type StoredRunEvent, parseStored } from '@anneal/protocol';
import { type StoreContext, keys } from './context.ts';

const STREAM_ID = /^(\d{1,20})-(\d{1,20})$/;
const U64_MAX = 2n ** 64n - 1n;

/** True for ids that can be passed as `after` (`0` means from the beginning): both parts of a
 * Redis stream id are unsigned 64-bit; a larger one would make XREAD fail and the stream end. */
export function isEventId(id: string): boolean {
  if (id === '0') return true;
  const match = STREAM_ID.exec(id);
  return match !== null && BigInt(match[1]!) <= U64_MAX && BigInt(match[2]!) <= U64_MAX;
}

function toEvents(key: string, entries: Array<[string, string[]]>): StoredRunEvent[] {
  return entries.map(([id, fields]) => {
    const index = fields.indexOf('event');
    return { id, event: parseStored(RunEvent, fields[index + 1] ?? '{}', `${key} ${id}`) };
  });
}

/** Id of the run's newest event, or undefined when it has none. */
export async function lastEventId(ctx: StoreContext, runId: string): Promise<string | undefined> {
  const entries = (await ctx.redis.xrevrange(
    keys(ctx.prefix).events(runId),
    '+',
    '-',
    'COUNT',
    1,
  )) as Array<[string, string[]]>;
  return entries[0]?.[0];
}

/** Stream-id order: -1, 0, 1 as `a` is before, equal to or after `b` ('0' is before any id). */
export function compareEventIds(a: string, b: string): number {
  const parts = (id: string) => (id === '0' ? [0n, 0n] : id.split('-').map((p) => BigInt(p)));
  const [am, as] = parts(a);
  const [bm, bs] = parts(b);
  if (am! !== bm!) return am! < bm! ? -1 : 1;
  return as! === bs! ? 0 : as! < bs! ? -1 : 1;
}

/** An event as stored: its id, its type and its JSON text, unparsed. */
export interface StoredEventJson {
  id: string;
  type: string;
  json: string;
}

/** The type of an event's JSON: read off the text where the writer put it first (every writer
 * but the Lua transition script, whose cjson orders keys freely), else parsed. */
function eventType(key: string, id: string, json: string): string {
  const first = /^\{"type":"([a-z]+:[a-z_]+)"/.exec(json);
  if (first) return first[1]!;
  const parsed = parseStored(RunEvent, json, `${key} ${id}`);
  return parsed.type;
}

/**
 * Events after `after` (exclusive), oldest first, as stored: for a reader that sends them on
 * (an SSE replay), so a long stream is not parsed and serialised again event by event.
 */
export async function readEventsJson(
  ctx: StoreContext,
  runId: string,
  after = '0',
  count = 1000,
): Promise<StoredEventJson[]> {
  const start = after === '0' ? '-' : `(${after}`;
  const key = keys(ctx.prefix).events(runId);
  const entries = (await ctx.redis.xrange(key, start, '+', 'COUNT', count)) as Array<
    [string, string[]]
  >;
  return entries.map(([id, fields]) => {
    const json = fields[fields.indexOf('event') + 1] ?? '{}';
    return { id, type: eventType(key, id, json), json };
  });
}

/** Events after `after` (exclusive), oldest first, without blocking. */
export async function readEvents(
  ctx: StoreContext,
  runId: string,
  after = '0',
  count = 1000,
): Promise<StoredRunEvent[]> {
  const start = after === '0' ? '-' : `(${after}`;
  const key = keys(ctx.prefix).events(runId);
  const entries = await ctx.redis.xrange(key, start, '+', 'COUNT', count);
  return toEvents(key, entries as Array<[string, string[]]>);
}

/** Waits up to `blockMs` for events of several runs at once, each after its own id; returns the
 * runs that had any. Needs a connection of its own (XREAD BLOCK). A `CLIENT UNBLOCK` of that
 * connection ends the wait early with no events. */
export async function readEventsOf(
  blockingClient: Redis,
  prefix: string,
  after: ReadonlyMap<string, string>,
  blockMs: number,
  count = 1000,
): Promise<Map<string, StoredRunEvent[]>> {
  const runIds = [...after.keys()];
  const result = new Map<string, StoredRunEvent[]>();
  if (runIds.length === 0) return result;
  const streamKeys = runIds.map((id) => keys(prefix).events(id));
  const reply = (await blockingClient.xread(
    'COUNT',
    count,
    'BLOCK',
    blockMs,
    'STREAMS',
    ...streamKeys,
    ...runIds.map((id) => after.get(id)!),
  )) as Array<[string, Array<[string, string[]]>]> | null;
  for (const [key, entries] of reply ?? []) {
    const runId = runIds[streamKeys.indexOf(key)];
    if (runId !== undefined) result.set(runId, toEvents(key, entries));
  }
  return result;
}
