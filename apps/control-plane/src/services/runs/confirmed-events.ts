// A stream's replay (XRANGE after Last-Event-ID) with acknowledged writes on: read on the
// durable connection and handed out only once a replica holds what was read (store durable.ts),
// so that a failover never takes back an event a client has seen. The live part of a stream
// goes through the event hub, which fences its reads the same way.
import {
  type StoreContext,
  type StoredEventJson,
  readEventsJson,
  readGeneration,
  replicatedSince,
} from '@anneal/store';
import type { AppContext } from '../../context.ts';

/** How long a replay waits for a replica to confirm a page before the stream ends (the client
 * reconnects with its Last-Event-ID). */
const CONFIRM_FOR_MS = 10_000;

/** Events after `after` as stored (readEventsJson), once a replica holds them. */
export async function readConfirmedEvents(
  ctx: Pick<AppContext, 'store'>,
  runId: string,
  after: string,
  count?: number,
): Promise<StoredEventJson[]> {
  const read = (store: StoreContext) => readEventsJson(store, runId, after, count);
  const durable = ctx.store.durable;
  if (!durable) return read(ctx.store);
  const reader = { ...ctx.store, redis: durable.redis };
  const deadline = Date.now() + CONFIRM_FOR_MS;
  for (;;) {
    const since = readGeneration(ctx.store, durable.redis);
    const events = await read(reader);
    if (events.length === 0 || (await replicatedSince(ctx.store, durable.redis, since))) {
      return events;
    }
    if (Date.now() > deadline) {
      throw new Error(`events of run ${runId} after ${after}: no replica confirmed them`);
    }
  }
}
