// What a step spends on scoring, counted where the worker sends it (docs/usage.md "What is
// metered"): requests to the LLM judge and tokens sent to the reward model. One meter per batch
// (GRPO) or cell (eval) wraps the run's judge and scorer; its counts go into the step record
// (`usage/judge_calls`, `usage/scored_tokens`) and are metered with the step's commit, once.
import type { RewardScorer } from '@anneal/engines';
import type { RubricJudge } from '@anneal/envs';
import { METRIC, type StepRecordMetrics } from './metrics.ts';

/** What a batch or cell sent the judge and the reward model. */
export interface ScoringUsage {
  judgeCalls: number;
  scoredTokens: number;
}

/** The step record's scoring usage keys. */
export function scoringUsage(usage: ScoringUsage): StepRecordMetrics {
  return {
    [METRIC.usageJudgeCalls]: usage.judgeCalls,
    [METRIC.usageScoredTokens]: usage.scoredTokens,
  };
}

export class ScoringMeter implements ScoringUsage {
  /** Requests sent to the judge (a call with no rubric sends none: LlmJudge returns at once). */
  judgeCalls = 0;
  /** Prompt and response tokens of every pair sent to the reward model. */
  scoredTokens = 0;

  /** `judge`, counting each request it is asked to make. */
  judge(judge: RubricJudge | undefined): RubricJudge | undefined {
    if (judge === undefined) return undefined;
    return {
      name: judge.name,
      judge: (prompt, response, rubrics, signal) => {
        if (rubrics.length > 0) this.judgeCalls++;
        return judge.judge(prompt, response, rubrics, signal);
      },
    };
  }

  /** `scorer`, counting the tokens of each pair it is sent. */
  scorer(scorer: RewardScorer | undefined): RewardScorer | undefined {
    if (scorer === undefined) return undefined;
    return {
      score: (pairs) => {
        for (const pair of pairs) this.scoredTokens += pair.prompt.length + pair.response.length;
        return scorer.score(pairs);
      },
      close: () => scorer.close(),
    };
  }

  /** The step record's scoring usage keys. */
  metrics(): StepRecordMetrics {
    return scoringUsage(this);
  }
}
