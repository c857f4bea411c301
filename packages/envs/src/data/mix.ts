// Weighted prompt mix over named sources (docs/recipe.md §3: 90% verifiable QA, 10% rubric prompts,
// configurable). Items of a source are drawn without replacement, reshuffled each epoch.
import { samplePromptMix } from '@anneal/rl';
import { shuffled, weightedIndex } from '../random.ts';
import type { Rng } from '../random.ts';

export const DEFAULT_MIX_WEIGHTS: Readonly<Record<string, number>> = Object.freeze({
  qa: 0.9,
  rubric: 0.1,
});

export interface MixSource<T> {
  name: string;
  weight: number;
  items: readonly T[];
}

export interface MixDraw<T> {
  source: string;
  item: T;
}

export class PromptMix<T> {
  private readonly sources: MixSource<T>[];
  private readonly queues: T[][];

  constructor(
    sources: readonly MixSource<T>[],
    private readonly rng: Rng,
  ) {
    if (sources.length === 0) throw new RangeError('prompt mix: needs at least one source');
    for (const s of sources) {
      if (!Number.isFinite(s.weight) || s.weight < 0) {
        throw new RangeError(`prompt mix: source '${s.name}': weight must be a finite number >= 0`);
      }
      if (s.weight > 0 && s.items.length === 0) {
        throw new RangeError(`prompt mix: source '${s.name}' has weight ${s.weight} but no items`);
      }
    }
    if (!sources.some((s) => s.weight > 0)) throw new RangeError('prompt mix: all weights are 0');
    this.sources = [...sources];
    this.queues = sources.map(() => []);
  }

  /** Normalised weights by source name. */
  get weights(): Record<string, number> {
    const total = this.sources.reduce((sum, s) => sum + s.weight, 0);
    return Object.fromEntries(this.sources.map((s) => [s.name, s.weight / total]));
  }

  private draw(index: number): MixDraw<T> {
    const source = this.sources[index] as MixSource<T>;
    const queue = this.queues[index] as T[];
    if (queue.length === 0) queue.push(...shuffled(this.rng, source.items));
    return { source: source.name, item: queue.pop() as T };
  }

  /** One prompt: the source drawn i.i.d. by weight. */
  next(): MixDraw<T> {
    return this.draw(
      weightedIndex(
        this.rng,
        this.sources.map((s) => s.weight),
      ),
    );
  }

  /** A batch whose source counts follow the weights as closely as integers allow (each within
   * 1 of n·w, systematic sampling of @anneal/rl), in shuffled order. This keeps the per-step mix
   * (and so the gradient variance of each component) steady. */
  batch(n: number): MixDraw<T>[] {
    const sources = samplePromptMix(
      this.sources.map((s) => s.weight),
      n,
      this.rng,
    );
    return Array.from(sources, (index) => this.draw(index));
  }
}
