// Seeded draws from weighted sources (docs/recipe.md §3 "Prompt mix", also used for SFT and RM
// batches): the @anneal/rl systematic allocation fixes each source's count within 1 of n·w,
// then items are drawn uniformly (with replacement) inside each source. A step's RNG is
// derived from (run seed, step), so a resumed run replays exactly the same batches.
import { createRng, deriveSeed, samplePromptMix, type Rng } from '@anneal/rl';

export interface WeightedPool<T> {
  name: string;
  weight: number;
  items: readonly T[];
}

export interface Drawn<T> {
  source: string;
  item: T;
}

/** The RNG of one named stream at one step (independent across streams and steps). */
export function stepRng(seed: number, stream: string, step: number): Rng {
  return createRng(deriveSeed(seed, `${stream}:${step}`));
}

export function drawMixBatch<T>(
  pools: readonly WeightedPool<T>[],
  n: number,
  rng: Rng,
): Drawn<T>[] {
  const empty = pools.find((p) => p.weight > 0 && p.items.length === 0);
  if (empty) throw new RangeError(`data source '${empty.name}' has no examples`);
  const sources = samplePromptMix(
    pools.map((p) => p.weight),
    n,
    rng,
  );
  return Array.from(sources, (j) => {
    const pool = pools[j]!;
    return { source: pool.name, item: pool.items[rng.int(0, pool.items.length - 1)]! };
  });
}
