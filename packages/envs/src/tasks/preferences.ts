// Synthetic preference pairs for the Bradley–Terry reward model (docs/recipe.md §5) with a latent
// preference: concise, well-formed answers beat verbose, repetitive or malformed ones. Both
// responses carry the same answer and the same tool calls, so only style separates them.
import { preferenceRowToTokens } from '../data/tokens.ts';
import type { ToolCallFormat } from '../format/toolCallFormat.ts';
import { pick } from '../random.ts';
import type { Rng } from '../random.ts';
import type { PreferenceFlaw, SftDemo, TaskPreferencePair } from './types.ts';

const FLAWS: readonly PreferenceFlaw[] = [
  'verbose',
  'repeated',
  'no_answer_marker',
  'trailing_noise',
];
const PADDING = ['I think it is ', 'It may be ', 'Hmm, maybe '];
const NOISE = ['!!', ' ok ok', ' ...', '??'];

function flawed(rng: Rng, format: ToolCallFormat, answer: string, flaw: PreferenceFlaw): string {
  const { markers } = format;
  switch (flaw) {
    case 'verbose':
      return format.answerText(pick(rng, PADDING) + answer);
    case 'repeated':
      return format.answerText(`${answer} ${answer}`);
    case 'no_answer_marker':
      return `${answer}${markers.eos}`;
    case 'trailing_noise':
      return format.answerText(answer + pick(rng, NOISE));
  }
}

/** One pair per demo: chosen = the demo's response, rejected = the same with a flawed answer. */
export function preferencePairs(
  rng: Rng,
  demos: readonly SftDemo[],
  format: ToolCallFormat,
): TaskPreferencePair[] {
  return demos.map((d) => {
    const last = d.turns[d.turns.length - 1];
    const answer = last && 'answer' in last ? last.answer : '';
    const lead = d.turns
      .slice(0, -1)
      .map((t) =>
        'call' in t ? format.callText(t.call) : 'result' in t ? format.resultText(t.result) : '',
      )
      .join('');
    const flaw = pick(rng, FLAWS);
    const row = {
      prompt: d.prompt,
      chosen: lead + format.answerText(answer),
      rejected: lead + flawed(rng, format, answer, flaw),
    };
    return { promptId: d.promptId, ...row, flaw, tokens: preferenceRowToTokens(row, format) };
  });
}
