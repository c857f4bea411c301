// Short invented names (3–4 letters: "Vek", "Oru", "Talm") for the built-in corpus. Short names
// keep questions, calls and results within the ~200-token context of the embedded model.
import { pick } from '../random.ts';
import type { Rng } from '../random.ts';

const CONSONANTS = [...'bdfgklmnprstvz'];
const VOWELS = [...'aeiou'];
const CODAS = [...'lmnrs'];

/** Words of the task templates and common English words a name must never equal. */
const RESERVED = new Set(
  'does live lives land pal town where which who what is in the and yes no say sun tea red dog cat map pen box cup hat fox sky not are was'.split(
    ' ',
  ),
);

const PATTERNS: ReadonlyArray<(rng: Rng) => string> = [
  (rng) => pick(rng, CONSONANTS) + pick(rng, VOWELS) + pick(rng, CONSONANTS), // Vek
  (rng) => pick(rng, VOWELS) + pick(rng, CONSONANTS) + pick(rng, VOWELS), // Oru
  (rng) => pick(rng, CONSONANTS) + pick(rng, VOWELS) + pick(rng, CODAS) + pick(rng, CONSONANTS), // Talm
];

/** `count` distinct capitalised names, none in `taken` (which is updated). */
export function inventNames(rng: Rng, count: number, taken: Set<string>): string[] {
  const names: string[] = [];
  const maxAttempts = count * 200 + 1000;
  for (let attempt = 0; names.length < count; attempt++) {
    if (attempt > maxAttempts) throw new RangeError(`could not invent ${count} distinct names`);
    const raw = pick(rng, PATTERNS)(rng);
    const key = raw.toLowerCase();
    if (taken.has(key) || RESERVED.has(key)) continue;
    taken.add(key);
    names.push(raw[0]!.toUpperCase() + raw.slice(1));
  }
  return names;
}
