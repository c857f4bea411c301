// Rubric reward r_base for rubric prompts (docs/recipe.md §4): 1 when every rubric passes.
import type { RubricJudge } from './judge.ts';
import { runCheck } from './programmatic.ts';
import type { Rubric, RubricVerdict } from './types.ts';

export class MissingJudgeError extends Error {
  override readonly name = 'MissingJudgeError';
}

export interface RubricContext {
  prompt: string;
  response: string;
  rubrics: readonly Rubric[];
  /** Needed only when some rubric has no programmatic check. */
  judge?: RubricJudge;
  signal?: AbortSignal;
}

/** Verdicts for every rubric: programmatic checks locally, the rest in one judge call. */
export async function evaluateRubrics(ctx: RubricContext): Promise<RubricVerdict[]> {
  const judged = ctx.rubrics.filter((r) => r.check === undefined);
  if (judged.length > 0 && !ctx.judge) {
    throw new MissingJudgeError(
      `rubric "${judged[0]?.text}" has no programmatic check and no judge endpoint is configured`,
    );
  }
  const judgeVerdicts =
    judged.length > 0 && ctx.judge
      ? await ctx.judge.judge(ctx.prompt, ctx.response, judged, ctx.signal)
      : [];
  let next = 0;
  return ctx.rubrics.map((rubric): RubricVerdict => {
    if (rubric.check) return { rubric, pass: runCheck(rubric.check, ctx.response), by: 'program' };
    return { rubric, pass: judgeVerdicts[next++] as boolean, by: 'judge' };
  });
}

/** True when all rubrics pass; skips the judge call when a programmatic rubric already fails. */
export async function rubricsPass(ctx: RubricContext): Promise<boolean> {
  const programmaticPass = ctx.rubrics.every((r) => !r.check || runCheck(r.check, ctx.response));
  if (!programmaticPass) return false;
  const verdicts = await evaluateRubrics({ ...ctx, rubrics: ctx.rubrics.filter((r) => !r.check) });
  return verdicts.every((v) => v.pass);
}
