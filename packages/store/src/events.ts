// Per-run event stream (Redis Streams). Stream ids are SSE ids: resume after `Last-Event-ID`.
import type { Redis } from 'ioredis';
import type { RunEvent, StoredRunEvent } from '@anneal/protocol';
import { type StoreContext, keys } from './context.ts';

const STREAM_ID = /^\d+-\d+$/;

/** True for ids that can be passed as `after` (`0` means from the beginning). */
export function isEventId(id: string): boolean {
  return id === '0' || STREAM_ID.test(id);
}

function toEvents(entries: Array<[string, string[]]>): StoredRunEvent[] {
  return entries.map(([id, fields]) => {
    const index = fields.indexOf('event');
    return { id, event: JSON.parse(fields[index + 1] ?? '{}') as RunEvent };
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
  const entries = await ctx.redis.xrange(
    keys(ctx.prefix).events(runId),
    start,
    '+',
    'COUNT',
    count,
  );
  return toEvents(entries as Array<[string, string[]]>);
}

/** Waits up to `blockMs` for events after `after`. Needs a connection of its own (XREAD BLOCK). */
export async function waitForEvents(
  blockingClient: Redis,
  prefix: string,
  runId: string,
  after: string,
  blockMs: number,
  count = 1000,
): Promise<StoredRunEvent[]> {
  const reply = await blockingClient.xread(
    'COUNT',
    count,
    'BLOCK',
    blockMs,
    'STREAMS',
    keys(prefix).events(runId),
    after,
  );
  if (!reply || reply.length === 0) return [];
  const [, entries] = reply[0] as [string, Array<[string, string[]]>];
  return toEvents(entries);
}
