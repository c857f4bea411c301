// Short rubric prompts whose rubrics are all programmatic (docs/recipe.md §3 rubric-based chat, sized
// for a tiny model): casing, repetition, punctuation, language, citation markers.
import { pick } from '../random.ts';
import type { Rng } from '../random.ts';
import { CITATION_MARKER_PATTERN } from '../rubrics/types.ts';
import type { TaskRubricPrompt } from './types.ts';

const WORDS = ['cat', 'dog', 'sun', 'sky', 'tea', 'map', 'pen', 'box', 'cup', 'hat', 'red', 'fox'];

type Template = (w: string) => Omit<TaskRubricPrompt, 'id'>;

const TEMPLATES: readonly Template[] = [
  (w) => ({
    prompt: `Say ${w} in caps.`,
    reference: w.toUpperCase(),
    rubrics: [
      {
        text: `contains the word ${w.toUpperCase()}`,
        check: { type: 'contains_all', terms: [w.toUpperCase()], caseSensitive: true },
      },
      {
        text: 'contains no lowercase letters',
        check: { type: 'regex', pattern: '[a-z]', mustMatch: false },
      },
    ],
  }),
  (w) => ({
    prompt: `Say ${w} twice.`,
    reference: `${w} ${w}`,
    rubrics: [
      {
        text: `says ${w} twice`,
        check: { type: 'regex', pattern: `\\b${w}\\b.*\\b${w}\\b`, flags: 'is', mustMatch: true },
      },
      { text: 'at most 3 words', check: { type: 'max_words', max: 3 } },
    ],
  }),
  (w) => ({
    prompt: `Say ${w}, no period.`,
    reference: w,
    rubrics: [
      { text: `contains the word ${w}`, check: { type: 'contains_all', terms: [w] } },
      { text: 'contains no period', check: { type: 'contains_none', terms: ['.'] } },
    ],
  }),
  (w) => ({
    prompt: `Is ${w} a word? Reply in English.`,
    reference: 'yes, it is',
    rubrics: [
      { text: 'response is in English', check: { type: 'language', language: 'en' } },
      { text: 'says yes', check: { type: 'contains_any', terms: ['yes'] } },
    ],
  }),
  (w) => ({
    prompt: `Say ${w}, no citations.`,
    reference: w,
    rubrics: [
      { text: `contains the word ${w}`, check: { type: 'contains_all', terms: [w] } },
      {
        text: 'contains no citation markers of the form [type:idx]',
        check: { type: 'regex', pattern: CITATION_MARKER_PATTERN, mustMatch: false },
      },
    ],
  }),
];

/** `count` distinct rubric prompts (at most templates × words). */
export function rubricPrompts(rng: Rng, count: number): TaskRubricPrompt[] {
  const max = TEMPLATES.length * WORDS.length;
  if (count > max) throw new RangeError(`at most ${max} built-in rubric prompts, asked ${count}`);
  const byPrompt = new Map<string, TaskRubricPrompt>();
  while (byPrompt.size < count) {
    const item = pick(rng, TEMPLATES)(pick(rng, WORDS));
    if (!byPrompt.has(item.prompt))
      byPrompt.set(item.prompt, { id: `rb${byPrompt.size}`, ...item });
  }
  return [...byPrompt.values()];
}
