// Adapter capacity per endpoint (docs/operations.md "Adapter capacity"): written from the
// operator config when the control plane starts, read back for `GET /v1/endpoints`-style views
// and tests. The slots themselves are taken and given back by the transition script
// (adapter-slots-script.ts).
import type { AdapterCapacity, AdapterRole } from '@anneal/protocol';
import { type StoreContext, keys } from './context.ts';

/** Declares (or, with `null`, removes) an endpoint's capacity: without one it admits every run. */
export async function setAdapterCapacity(
  ctx: StoreContext,
  role: AdapterRole,
  endpoint: string,
  capacity: Pick<AdapterCapacity, 'slots' | 'oversubscribe'> | null,
): Promise<void> {
  const key = `${keys(ctx.prefix).endpointSlots(role, endpoint)}:capacity`;
  if (capacity === null) {
    await ctx.redis.del(key);
    return;
  }
  await ctx.redis.hset(key, {
    slots: String(capacity.slots),
    oversubscribe: capacity.oversubscribe ? '1' : '0',
  });
}

export interface AdapterSlots {
  /** Declared slots; null when undeclared. */
  slots: number | null;
  oversubscribe: boolean;
  /** Runs running on the endpoint and the slots each holds; a shared reference in use holds
   * its one slot as `reference:<id>` (adapter-slots-script.ts). */
  held: Array<{ runId: string; slots: number }>;
  /** Runs refused for want of slots, first in line first. */
  waiting: string[];
}

/** What an endpoint's slots are and who holds them (one MULTI). */
export async function readAdapterSlots(
  ctx: StoreContext,
  role: AdapterRole,
  endpoint: string,
): Promise<AdapterSlots> {
  const base = keys(ctx.prefix).endpointSlots(role, endpoint);
  const reply = await ctx.redis
    .multi()
    .hmget(`${base}:capacity`, 'slots', 'oversubscribe')
    .hgetall(`${base}:held`)
    .zrange(`${base}:waiting`, 0, -1)
    .exec();
  const [capacity, held, waiting] = (reply ?? []).map(([error, value]) => {
    if (error) throw error;
    return value;
  }) as [Array<string | null>, Record<string, string>, string[]];
  return {
    slots: capacity[0] == null ? null : Number(capacity[0]),
    oversubscribe: capacity[1] === '1',
    held: Object.entries(held)
      .map(([runId, slots]) => ({ runId, slots: Number(slots) }))
      .sort((a, b) => a.runId.localeCompare(b.runId)),
    waiting,
  };
}
