// No non-finite number reaches the trainer or the step record (docs/recipe.md §2.5): a NaN or
// infinite sampler logprob, trainer logprob or per-token advantage stops the step with an error
// naming the step, the datum (the rollout's index in the batch) and the datum position, never a
// NaN update; a guardrail on the metric it stands for may then roll the run back. The trainers refuse such datums too (embedded checkDatum, the Tinker-HTTP client
// before sending); this check says which step and rollout it was.
import type { StepRecordKey } from '@anneal/protocol';
import { NonFiniteStepError } from '../../errors.ts';
import { generatedPosition, type GeneratedLayout } from './advantages.ts';

/** Throws a NonFiniteStepError (a RangeError) at the first non-finite value of a flat
 * per-generated-token array; `metric` is the step-record key a guardrail reads it as
 * (docs/guardrails.md "Defaults"). */
export function assertFiniteTokens(
  values: ArrayLike<number>,
  layout: Pick<GeneratedLayout, 'offsets' | 'runs'>,
  field: string,
  step: number,
  metric: StepRecordKey,
): void {
  for (let i = 0; i < layout.runs.length; i++) {
    const start = layout.offsets[i]!;
    const end = layout.offsets[i + 1]!;
    for (let k = start; k < end; k++) {
      const value = values[k]!;
      if (Number.isFinite(value)) continue;
      const token = generatedPosition(layout.runs[i]!, k - start);
      // datum position t − 1 describes token t (common/datum.ts)
      throw new NonFiniteStepError(
        metric,
        value,
        `step ${step}: datum ${i}: ${field}[${token - 1}] is ${value} (generated token ${token} of rollout ${i})`,
      );
    }
  }
}
