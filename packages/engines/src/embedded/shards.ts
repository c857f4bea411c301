// Splitting a batch across trainer threads: balanced by estimated cost (tokens, plus the
// quadratic attention term), Bradley–Terry pairs kept together, original order restorable.
import type { LossFn } from '../types.ts';
import type { CheckedDatum } from './losses.ts';

/** Below this many tokens a batch runs on one thread (the split would not pay). */
export const MIN_TOKENS_TO_SPLIT = 128;

const cost = (T: number) => T * (1 + T / 512);

/** Index lists, one per non-empty shard; BT pairs (2i, 2i+1) stay in the same shard. */
export function shardBatch(
  data: readonly CheckedDatum[],
  lossFn: LossFn,
  threads: number,
): number[][] {
  const unit = lossFn === 'bradley_terry' ? 2 : 1;
  const units: Array<{ indices: number[]; cost: number }> = [];
  for (let i = 0; i < data.length; i += unit) {
    const indices = Array.from({ length: Math.min(unit, data.length - i) }, (_, k) => i + k);
    units.push({ indices, cost: indices.reduce((c, j) => c + cost(data[j]!.tokens.length), 0) });
  }
  const tokens = data.reduce((t, d) => t + d.tokens.length, 0);
  const shardCount = tokens < MIN_TOKENS_TO_SPLIT ? 1 : Math.min(threads, units.length);
  if (shardCount <= 1) return [data.map((_, i) => i)];
  // longest-processing-time first: each unit goes to the least loaded shard
  const shards = Array.from({ length: shardCount }, () => ({ indices: [] as number[], cost: 0 }));
  for (const u of [...units].sort((a, b) => b.cost - a.cost)) {
    const target = shards.reduce((best, s) => (s.cost < best.cost ? s : best));
    target.indices.push(...u.indices);
    target.cost += u.cost;
  }
  return shards.map((s) => s.indices.sort((a, b) => a - b)).filter((s) => s.length > 0);
}
