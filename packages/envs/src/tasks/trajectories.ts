// SFT demonstrations in the production tool-call format (docs/recipe.md §1 stage 1): search-QA
// trajectories (one call per hop), tool-free answers (with a redundant search a fraction of the
// time, so RL has tool efficiency to gain) and rubric-prompt answers.
import type { SftTurn } from '../data/schemas.ts';
import { sftRowToTokens } from '../data/tokens.ts';
import type { ToolCallFormat } from '../format/toolCallFormat.ts';
import type { Rng } from '../random.ts';
import type { SftDemo, TaskQa, TaskRubricPrompt } from './types.ts';

export type SearchText = (query: string) => string;

/** The query a model would send for a tool-free question (the name, or the expression). */
export function redundantQuery(qa: TaskQa): string {
  if (qa.kind === 'arithmetic') return qa.question.replace(/\?$/, '');
  return qa.question.split(/[ ']/)[0] as string;
}

export function qaTurns(qa: TaskQa, search: SearchText): SftTurn[] {
  const turns: SftTurn[] = [];
  const entities = qa.chain?.entities ?? [];
  for (const query of entities.slice(0, -1)) turns.push({ call: query }, { result: search(query) });
  turns.push({ answer: qa.answer });
  return turns;
}

function demo(
  format: ToolCallFormat,
  source: SftDemo['source'],
  promptId: string,
  prompt: string,
  turns: SftTurn[],
  redundantCall: boolean,
): SftDemo {
  const { tokens, lossMask, promptLength } = sftRowToTokens({ prompt, turns }, format);
  return {
    source,
    promptId,
    prompt,
    turns,
    text: format.tokenizer.decode(tokens),
    tokens,
    lossMask,
    promptLength,
    redundantCall,
  };
}

export interface DemoInputs {
  qa: readonly TaskQa[];
  toolFree: readonly TaskQa[];
  rubric: readonly TaskRubricPrompt[];
  search: SearchText;
  format: ToolCallFormat;
  /** Share of tool-free demos that search anyway (default 0.3). */
  redundantCallRate: number;
}

export function sftDemos(rng: Rng, inputs: DemoInputs): SftDemo[] {
  const { format, search } = inputs;
  const qa = inputs.qa.map((q) => demo(format, 'qa', q.id, q.question, qaTurns(q, search), false));
  const toolFree = inputs.toolFree.map((q) => {
    const redundant = rng.next() < inputs.redundantCallRate;
    const query = redundantQuery(q);
    const turns: SftTurn[] = redundant
      ? [{ call: query }, { result: search(query) }, { answer: q.answer }]
      : [{ answer: q.answer }];
    return demo(format, 'tool_free', q.id, q.question, turns, redundant);
  });
  const rubric = inputs.rubric.map((r) =>
    demo(format, 'rubric', r.id, r.prompt, [{ answer: r.reference }], false),
  );
  return [...qa, ...toolFree, ...rubric];
}
