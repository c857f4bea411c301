// The built-in world: people live in towns, towns are in lands, each person has a pal.
// Every relation is functional (one object per subject), so a question that walks relations
// forward from a named entity has exactly one answer. One short page per person and town.
import { pick, shuffled } from '../random.ts';
import type { Rng } from '../random.ts';
import type { CorpusDocument } from '../search/localCorpus.ts';
import { inventNames } from './names.ts';

export type EntityKind = 'person' | 'town' | 'land';
export type Relation = 'lives_in' | 'pal' | 'in';

export interface Fact {
  subject: string;
  relation: Relation;
  object: string;
}

export interface World {
  kinds: ReadonlyMap<string, EntityKind>;
  facts: readonly Fact[];
  documents: readonly CorpusDocument[];
  /** Names used nowhere in the corpus (for tool-free questions). */
  outsiders: readonly string[];
}

export interface WorldSizes {
  persons: number;
  towns: number;
  lands: number;
  outsiders: number;
}

/** The sentence of a fact, as it appears on the subject's page. */
export function factText(fact: Fact): string {
  switch (fact.relation) {
    case 'lives_in':
      return `${fact.subject} lives in ${fact.object}.`;
    case 'pal':
      return `${fact.subject}'s pal is ${fact.object}.`;
    case 'in':
      return `${fact.subject} is in ${fact.object}.`;
  }
}

/** Read the object of `relation` for `subject` back from page text (the inverse of factText). */
export function readFact(text: string, subject: string, relation: Relation): string | undefined {
  const patterns: Record<Relation, RegExp> = {
    lives_in: new RegExp(`\\b${subject} lives in (\\w+)\\.`),
    pal: new RegExp(`\\b${subject}'s pal is (\\w+)\\.`),
    in: new RegExp(`\\b${subject} is in (\\w+)\\.`),
  };
  return patterns[relation].exec(text)?.[1];
}

export function buildWorld(rng: Rng, sizes: WorldSizes): World {
  if (sizes.persons < 3 || sizes.towns < 2 || sizes.lands < 2) {
    throw new RangeError('built-in world needs at least 3 persons, 2 towns and 2 lands');
  }
  const taken = new Set<string>();
  const persons = inventNames(rng, sizes.persons, taken);
  const towns = inventNames(rng, sizes.towns, taken);
  const lands = inventNames(rng, sizes.lands, taken);
  const outsiders = inventNames(rng, sizes.outsiders, taken);
  const kinds = new Map<string, EntityKind>([
    ...persons.map((n) => [n, 'person'] as const),
    ...towns.map((n) => [n, 'town'] as const),
    ...lands.map((n) => [n, 'land'] as const),
  ]);
  const facts: Fact[] = [];
  // Every land gets a town and every town a resident first, so all entities are reachable.
  towns.forEach((town, i) =>
    facts.push({
      subject: town,
      relation: 'in',
      object: lands[i % lands.length] ?? pick(rng, lands),
    }),
  );
  const order = shuffled(rng, persons);
  order.forEach((person, i) => {
    const town = i < towns.length ? (towns[i] as string) : pick(rng, towns);
    facts.push({ subject: person, relation: 'lives_in', object: town });
  });
  // Pals: a random derangement (nobody is their own pal).
  const pals = shuffled(rng, persons);
  persons.forEach((person, i) => {
    const pal = pals[i] === person ? (pals[(i + 1) % pals.length] as string) : (pals[i] as string);
    facts.push({ subject: person, relation: 'pal', object: pal });
  });
  return { kinds, facts, documents: pages(facts), outsiders };
}

function pages(facts: readonly Fact[]): CorpusDocument[] {
  const bySubject = new Map<string, Fact[]>();
  for (const fact of facts)
    bySubject.set(fact.subject, [...(bySubject.get(fact.subject) ?? []), fact]);
  const relationOrder: Relation[] = ['lives_in', 'pal', 'in'];
  return [...bySubject.entries()].map(([subject, own]) => ({
    id: subject.toLowerCase(),
    title: subject,
    text: [...own]
      .sort((a, b) => relationOrder.indexOf(a.relation) - relationOrder.indexOf(b.relation))
      .map(factText)
      .join(' '),
  }));
}

/** The object of (subject, relation), straight from the fact table. */
export function lookup(world: World, subject: string, relation: Relation): string | undefined {
  return world.facts.find((f) => f.subject === subject && f.relation === relation)?.object;
}
