// Multi-hop questions by sequential expansion (docs/recipe.md §3): start at a seed entity (the answer),
// repeatedly pick a fact that introduces a new entity pointing at the current one, then rewrite
// the chain into a name-free nested question that names only the last entity reached:
//   Talm <-in- Oru <-lives_in- Vek   =>   "Which land is Vek's town in?" -> Talm
import { pick } from '../random.ts';
import type { Rng } from '../random.ts';
import type { Fact, Relation, World } from './corpus.ts';
import { lookup, readFact } from './corpus.ts';

export interface Chain {
  /** Entities from the named anchor to the answer: [anchor, …, answer]. */
  entities: string[];
  /** Relations walked forward from the anchor: relations[i] links entities[i] -> entities[i+1]. */
  relations: Relation[];
}

/** Sequential expansion from `seed` for `hops` steps; undefined when it gets stuck. */
export function expandChain(world: World, seed: string, hops: number, rng: Rng): Chain | undefined {
  const entities = [seed];
  const relations: Relation[] = [];
  for (let hop = 0; hop < hops; hop++) {
    const current = entities[0] as string;
    const incoming = world.facts.filter(
      (f) => f.object === current && !entities.includes(f.subject),
    );
    if (incoming.length === 0) return undefined;
    const fact: Fact = pick(rng, incoming);
    entities.unshift(fact.subject);
    relations.unshift(fact.relation);
  }
  const chain = { entities, relations };
  return revealsAnswer(world, chain) ? undefined : chain;
}

/** docs/recipe.md §3: "no single fact reveals the answer" — for 2+ hops no fact links anchor and answer. */
function revealsAnswer(world: World, chain: Chain): boolean {
  if (chain.relations.length < 2) return false;
  const anchor = chain.entities[0];
  const answer = chain.entities[chain.entities.length - 1];
  return world.facts.some(
    (f) =>
      (f.subject === anchor && f.object === answer) ||
      (f.subject === answer && f.object === anchor),
  );
}

const NOUN: Record<Relation, string> = { lives_in: 'town', pal: 'pal', in: 'land' };

/** Name-free nested question: only the anchor is named, every other entity is a description. */
export function chainQuestion(chain: Chain): string {
  let phrase = chain.entities[0] as string;
  const last = chain.relations[chain.relations.length - 1] as Relation;
  for (const relation of chain.relations.slice(0, -1)) phrase = `${phrase}'s ${NOUN[relation]}`;
  switch (last) {
    case 'lives_in':
      return `Where does ${phrase} live?`;
    case 'pal':
      return `Who is ${phrase}'s pal?`;
    case 'in':
      return `Which land is ${phrase} in?`;
  }
}

/** Solver 1: walk the chain with the fact table. */
export function solveWithFacts(world: World, chain: Chain): string | undefined {
  let current: string | undefined = chain.entities[0];
  for (const relation of chain.relations) current = current && lookup(world, current, relation);
  return current;
}

/** Solver 2: walk the chain through search, reading each fact from the top results as a
 * model would; returns the answer and the (query, result text) steps. */
export function solveWithSearch(
  chain: Chain,
  search: (query: string) => string,
): { answer: string | undefined; steps: Array<{ query: string; result: string }> } {
  let current: string | undefined = chain.entities[0];
  const steps: Array<{ query: string; result: string }> = [];
  for (const relation of chain.relations) {
    if (current === undefined) break;
    const result = search(current);
    steps.push({ query: current, result });
    current = readFact(result, current, relation);
  }
  return { answer: current, steps };
}
