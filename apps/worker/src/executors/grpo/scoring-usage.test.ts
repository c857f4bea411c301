// What a GRPO step sends the LLM judge and the reward model is metered with the step's commit
// (docs/usage.md "What is metered"): over a run, the records' usage/judge_calls and
// usage/scored_tokens add up to what the judge and the scorer received, counted on their side
// (requests; prompt and response tokens of every scored pair), with and without pipelining.
import type { RewardScorer } from '@anneal/engines';
import { builtinTasks, type RubricJudge } from '@anneal/envs';
import { describe, expect, it } from 'vitest';
import { builtinDataCatalog } from '../../resources/data/builtin-catalog.ts';
import type { DataCatalog, PromptExample } from '../../resources/data/catalog.ts';
import { METRIC } from '../metrics.ts';
import { memoryContext } from '../../../test/executors/fakes.ts';
import {
  VersionedInference,
  VersionedTrainerModel,
  fakeResources,
  grpoSpec,
} from '../../../test/executors/pipeline-fakes.ts';
import { runGrpo } from './index.ts';

const SEED = 5;
const STEPS = 4;

/** Rubric prompts the judge grades (no programmatic check), beside the built-in QA prompts. */
function judgedCatalog(): DataCatalog {
  const builtin = builtinDataCatalog(builtinTasks(0));
  const judged: PromptExample[] = Array.from({ length: 8 }, (_, i) => ({
    kind: 'rubric',
    id: `judged-${i}`,
    prompt: `Greet the reader in style ${i}.`,
    rubrics: [{ text: 'is polite' }, { text: 'is brief' }],
  }));
  return {
    ...builtin,
    sources: { ...builtin.sources, prompts: [...builtin.sources.prompts, 'judged'] },
    prompts: (source) => (source === 'judged' ? judged : builtin.prompts(source)),
  };
}

/** The judge's side: every request it answered (all rubrics pass). */
class CountingJudge implements RubricJudge {
  readonly name = 'counting-judge';
  requests = 0;
  judge(_prompt: string, _response: string, rubrics: readonly { text: string }[]) {
    this.requests++;
    return Promise.resolve(rubrics.map(() => true));
  }
}

/** The reward model's side: the tokens of every pair it scored (score: the response length). */
class CountingScorer implements RewardScorer {
  tokens = 0;
  pairs = 0;
  score(pairs: ReadonlyArray<{ prompt: readonly number[]; response: readonly number[] }>) {
    for (const p of pairs) this.tokens += p.prompt.length + p.response.length;
    this.pairs += pairs.length;
    return Promise.resolve(Float32Array.from(pairs, (p) => p.response.length));
  }
  close() {
    return Promise.resolve();
  }
}

const total = (records: Iterable<Record<string, number | null>>, key: string) =>
  [...records].reduce((a, m) => a + (m[key] ?? 0), 0);

describe('GRPO meters what it sends the judge and the reward model', () => {
  it.each([0, 1])(
    'lag %i: usage/judge_calls and usage/scored_tokens are what the judge and the scorer received',
    async (lag) => {
      const spec = grpoSpec({
        seed: SEED,
        steps: STEPS,
        rollout: { maxPolicyLag: lag, groupSize: 4, promptsPerStep: 4 },
        data: {
          mix: [
            { source: 'judged', weight: 1 },
            { source: 'search-qa', weight: 1 },
          ],
        },
      });
      const inference = new VersionedInference(SEED, STEPS);
      const model = new VersionedTrainerModel(inference);
      const judge = new CountingJudge();
      const scorer = new CountingScorer();
      const resources = {
        ...fakeResources(inference, model),
        data: judgedCatalog(),
        judge,
        rewardScorer: scorer,
      };
      const ctx = memoryContext(spec, resources);
      await runGrpo(ctx);
      const records = [...ctx.steps.values()];
      expect(records).toHaveLength(STEPS);
      // the run asked the judge and scored rollouts (else the equalities below say nothing)
      expect(judge.requests).toBeGreaterThan(0);
      expect(scorer.pairs).toBeGreaterThanOrEqual(STEPS * 16);
      expect(total(records, METRIC.usageJudgeCalls)).toBe(judge.requests);
      expect(total(records, METRIC.usageScoredTokens)).toBe(scorer.tokens);
      console.log(
        `lag ${lag}: ${judge.requests} judge requests, ${scorer.pairs} pairs / ${scorer.tokens} tokens scored over ${STEPS} steps of 16 rollouts`,
      );
    },
  );
});
