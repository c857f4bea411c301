// Verifiable search QA for the built-in tasks: chains by sequential expansion, rewritten as
// name-free questions, kept only when two independent solvers (fact table, and search as a
// model would use it) both reach the seed answer, and when the demo trajectory fits the context.
import { pick, shuffled } from '../random.ts';
import type { Rng } from '../random.ts';
import { chainQuestion, expandChain, solveWithFacts, solveWithSearch } from './chains.ts';
import type { Relation, World } from './corpus.ts';
import type { TaskQa } from './types.ts';

export interface QaOptions {
  count: number;
  hopWeights: Readonly<Record<1 | 2 | 3, number>>;
  /** Rendered search output for a query, exactly as the tool shows it to the model. */
  searchText: (query: string) => string;
  /** Whether the question's demo trajectory fits the model's context. */
  fits: (qa: TaskQa) => boolean;
}

/** Integer counts per hop that follow the weights (largest remainder). */
export function hopCounts(
  count: number,
  weights: Readonly<Record<1 | 2 | 3, number>>,
): Record<1 | 2 | 3, number> {
  const hops = [1, 2, 3] as const;
  const total = hops.reduce((sum, h) => sum + Math.max(0, weights[h]), 0);
  if (!(total > 0)) throw new RangeError('hopWeights: at least one weight must be > 0');
  const exact = hops.map((h) => (count * Math.max(0, weights[h])) / total);
  const counts = exact.map(Math.floor);
  const order = hops
    .map((_, i) => i)
    .sort((a, b) => exact[b]! - counts[b]! - (exact[a]! - counts[a]!));
  for (let left = count - counts.reduce((a, b) => a + b, 0), k = 0; left > 0; left--, k++) {
    const i = order[k % order.length] as number;
    counts[i] = (counts[i] as number) + 1;
  }
  return { 1: counts[0] as number, 2: counts[1] as number, 3: counts[2] as number };
}

const RELATIONS: readonly Relation[] = ['lives_in', 'pal', 'in'];

function questionsWithHops(
  rng: Rng,
  world: World,
  hops: number,
  wanted: number,
  options: QaOptions,
  seen: Set<string>,
): TaskQa[] {
  const found: TaskQa[] = [];
  const maxAttempts = wanted * 200 + 2000;
  for (let attempt = 0; found.length < wanted && attempt < maxAttempts; attempt++) {
    // The answer's kind decides the last relation (towns <- lives_in, persons <- pal, lands <- in):
    // drawing the relation first keeps the three question types balanced.
    const relation = pick(rng, RELATIONS);
    const seed = pick(
      rng,
      world.facts.filter((f) => f.relation === relation),
    ).object;
    const chain = expandChain(world, seed, hops, rng);
    if (!chain) continue;
    const question = chainQuestion(chain);
    if (seen.has(question)) continue;
    const bySearch = solveWithSearch(chain, options.searchText).answer;
    if (solveWithFacts(world, chain) !== seed || bySearch !== seed) continue;
    const qa: TaskQa = {
      id: '',
      kind: 'multi_hop',
      question,
      answer: seed,
      hops,
      needsSearch: true,
      chain,
    };
    if (!options.fits(qa)) continue;
    seen.add(question);
    found.push(qa);
  }
  if (found.length < wanted) {
    throw new RangeError(
      `found only ${found.length} of ${wanted} distinct ${hops}-hop questions; raise sizes.persons/towns`,
    );
  }
  return found;
}

/** `count` distinct verified questions, hops mixed by weight, in shuffled order. */
export function multiHopQuestions(rng: Rng, world: World, options: QaOptions): TaskQa[] {
  const counts = hopCounts(options.count, options.hopWeights);
  const seen = new Set<string>();
  const all = ([1, 2, 3] as const).flatMap((h) =>
    questionsWithHops(rng, world, h, counts[h], options, seen),
  );
  return shuffled(rng, all).map((qa, i) => ({ ...qa, id: `qa${i}` }));
}
