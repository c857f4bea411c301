// Questions answerable without the tool: small arithmetic ("2+3?" -> 5) and facts stated in the
// question about names that are not in the corpus. They let RL learn tool efficiency.
import { randInt } from '../random.ts';
import type { Rng } from '../random.ts';
import type { TaskQa } from './types.ts';

function arithmetic(rng: Rng): Omit<TaskQa, 'id'> {
  const a = randInt(rng, 0, 9);
  const b = randInt(rng, 0, 9);
  const plus = rng.next() < 0.5;
  const [x, y] = plus ? [a, b] : [Math.max(a, b), Math.min(a, b)];
  const answer = plus ? x + y : x - y;
  return {
    kind: 'arithmetic',
    question: `${x}${plus ? '+' : '-'}${y}?`,
    answer: String(answer),
    hops: 0,
    needsSearch: false,
  };
}

function statedFact(rng: Rng, names: readonly string[]): Omit<TaskQa, 'id'> {
  const a = names[randInt(rng, 0, names.length - 1)] as string;
  let b = names[randInt(rng, 0, names.length - 1)] as string;
  if (b === a) b = names[(names.indexOf(a) + 1) % names.length] as string;
  const question =
    rng.next() < 0.5
      ? `${a} lives in ${b}. Where does ${a} live?`
      : `${a}'s pal is ${b}. Who is ${a}'s pal?`;
  return { kind: 'stated_fact', question, answer: b, hops: 0, needsSearch: false };
}

/** `count` distinct tool-free questions (about 60% arithmetic, 40% stated facts). */
export function toolFreeQuestions(rng: Rng, count: number, outsiders: readonly string[]): TaskQa[] {
  if (outsiders.length < 2)
    throw new RangeError('tool-free questions need at least 2 outsider names');
  const byQuestion = new Map<string, TaskQa>();
  for (let attempt = 0; byQuestion.size < count; attempt++) {
    if (attempt > count * 100 + 1000)
      throw new RangeError(`could not make ${count} distinct tool-free questions`);
    const item = rng.next() < 0.6 ? arithmetic(rng) : statedFact(rng, outsiders);
    if (!byQuestion.has(item.question))
      byQuestion.set(item.question, { id: `tf${byQuestion.size}`, ...item });
  }
  return [...byQuestion.values()];
}
