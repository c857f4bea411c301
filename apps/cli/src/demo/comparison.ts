// The demo's recipe dimensions for the SFT, control and GRPO checkpoints, read from the eval's
// answers (GET /v1/runs/{id}/items) at the headline budget, with paired tests on the same
// questions: exact McNemar for accuracy, exact Wilcoxon signed-rank for the per-question counts
// (packages/envs eval/paired-tests.ts). The eval answers every question with the same sampling
// seeds for each checkpoint, so question i of one checkpoint pairs with question i of another.
import { mcnemarExact, signedRankExact } from '@anneal/envs';
import type { EvalItem } from '@anneal/protocol';

/** Eval checkpoint index of each arm (the order of the eval spec's `models`). */
export const ARMS = { sft: 0, control: 1, grpo: 2 } as const;
export type Arm = keyof typeof ARMS;

export type DimensionName =
  'accuracy' | 'toolCalls' | 'toolCallsToolFree' | 'failedCalls' | 'length' | 'preference';

export interface Dimension {
  name: DimensionName;
  /** What the recipe wants of it (docs/recipe.md): `higher` or `lower`. */
  better: 'higher' | 'lower';
  test: 'mcnemar-exact' | 'wilcoxon-signed-rank-exact';
  /** Questions paired (the tool-free ones for toolCallsToolFree; scored ones for preference). */
  questions: number;
  /** Mean per arm over those questions (accuracy: the share correct); null when not measured. */
  sft: number | null;
  control: number | null;
  grpo: number | null;
  /** Two-sided p-values of GRPO against the control and against SFT; null when not measured. */
  pGrpoVsControl: number | null;
  pGrpoVsSft: number | null;
}

export interface Comparison {
  budget: number;
  /** Questions answered by all three checkpoints at `budget`. */
  questions: number;
  dimensions: Dimension[];
}

interface Spec {
  name: DimensionName;
  better: 'higher' | 'lower';
  /** The value of an answer, undefined to leave the question out. */
  value: (item: EvalItem) => number | boolean | undefined;
}

const SPECS: readonly Spec[] = [
  { name: 'accuracy', better: 'higher', value: (i) => i.correct },
  { name: 'toolCalls', better: 'lower', value: (i) => i.toolCalls },
  {
    name: 'toolCallsToolFree',
    better: 'lower',
    value: (i) => (i.needsSearch === false ? i.toolCalls : undefined),
  },
  { name: 'failedCalls', better: 'lower', value: (i) => i.brokenCalls },
  { name: 'length', better: 'lower', value: (i) => i.completionTokens },
  { name: 'preference', better: 'higher', value: (i) => i.reward },
];

const mean = (xs: readonly number[]) =>
  xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length;

/** The paired comparison at `budget`, from the eval's items (every checkpoint and budget). */
export function compareArms(items: readonly EvalItem[], budget: number): Comparison {
  const byArm = (arm: Arm) =>
    new Map(
      items
        .filter((i) => i.checkpoint === ARMS[arm] && i.budget === budget)
        .map((i) => [i.id, i] as const),
    );
  const arms = { sft: byArm('sft'), control: byArm('control'), grpo: byArm('grpo') };
  const ids = [...arms.grpo.keys()].filter((id) => arms.sft.has(id) && arms.control.has(id));
  const dimensions = SPECS.map((spec): Dimension => {
    const rows = ids
      .map((id) => ({
        sft: spec.value(arms.sft.get(id)!),
        control: spec.value(arms.control.get(id)!),
        grpo: spec.value(arms.grpo.get(id)!),
      }))
      .filter((r) => r.sft !== undefined && r.control !== undefined && r.grpo !== undefined);
    const test = spec.name === 'accuracy' ? 'mcnemar-exact' : 'wilcoxon-signed-rank-exact';
    const base = { name: spec.name, better: spec.better, test, questions: rows.length } as const;
    if (rows.length === 0) {
      return {
        ...base,
        sft: null,
        control: null,
        grpo: null,
        pGrpoVsControl: null,
        pGrpoVsSft: null,
      };
    }
    const col = (arm: Arm) => rows.map((r) => Number(r[arm]));
    const p = (a: Arm) =>
      spec.name === 'accuracy'
        ? mcnemarExact(
            rows.map((r) => r[a] === true),
            rows.map((r) => r.grpo === true),
          ).p
        : signedRankExact(col(a), col('grpo')).p;
    return {
      ...base,
      sft: mean(col('sft')),
      control: mean(col('control')),
      grpo: mean(col('grpo')),
      pGrpoVsControl: p('control'),
      pGrpoVsSft: p('sft'),
    };
  });
  return { budget, questions: ids.length, dimensions };
}
