// Who says an eval answer is right (docs/evaluation.md "Grading"): the verifier (normalised
// match against the answer or an alias, as GRPO's QA reward), or with `judge: llm` the run's
// registered LLM judge, asked whether the answer gives the reference answer. Unanswerable
// questions are graded by the abstention rule either way, and a missing answer is wrong
// without asking anyone.
import { isAbstention, verifyAnswer, type RubricJudge, type Rollout } from '@anneal/envs';
import type { EvalSpec } from '@anneal/protocol';
import type { EvalExample } from '../../resources/data/catalog.ts';

export type Grader = EvalSpec['judge'];

export interface Grade {
  correct: boolean;
  /** What decided `correct`: the verifier (also the abstention rule) or the LLM judge. */
  grader: Grader;
}

/** The judge's rubric for one question: the answer names the reference answer. */
export function answerRubric(e: EvalExample): string {
  const aliases = e.key.aliases ?? [];
  const also =
    aliases.length === 0 ? '' : ` (also accepted: ${aliases.map((a) => `"${a}"`).join(', ')})`;
  return (
    `The response answers the question with the reference answer "${e.key.answer}"${also}; ` +
    'wording, case and formatting may differ, the fact may not.'
  );
}

/** The verifier's grade (and the abstention rule's on an unanswerable question). */
export function verifierGrade(e: EvalExample, answer: string | null): Grade {
  const correct = e.unanswerable === true ? isAbstention(answer) : verifyAnswer(answer, e.key);
  return { correct, grader: 'verifier' };
}

/** One grade per answer (examples[i] was answered by rollouts[i]). */
export function gradeAnswers(
  examples: readonly EvalExample[],
  rollouts: readonly Rollout[],
  judge: RubricJudge | undefined,
  signal?: AbortSignal,
): Promise<Grade[]> {
  return Promise.all(
    examples.map(async (e, i): Promise<Grade> => {
      const answer = rollouts[i]?.answer ?? null;
      if (judge === undefined || e.unanswerable === true || answer === null) {
        return verifierGrade(e, answer);
      }
      const [pass] = await judge.judge(e.question, answer, [{ text: answerRubric(e) }], signal);
      return { correct: pass === true, grader: 'llm' };
    }),
  );
}
