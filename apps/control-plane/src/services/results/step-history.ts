// The body of GET /v1/runs/{id}/metrics: a page of the run's step records (from `fromStep`, at
// most `limit`) and the steps guardrail rollbacks took back. A page without a metric filter is
// the stored JSON of each record joined, never parsed or serialised again (a 1,000-step GRPO page
// was ~0.6 s of the event loop parsed and re-serialised, blocking every other request); with
// `names`, records are parsed a slice at a time, yielding to the event loop between slices.
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { StepRecord, parseStored } from '@anneal/protocol';
import { keys, onlyMetrics, readRolledBackSteps, readStepsJson } from '@anneal/store';
import type { AppContext } from '../../context.ts';

/** Records parsed between two yields to the event loop. */
const SLICE = 200;

export interface StepHistoryQuery {
  fromStep: number;
  limit: number;
  names?: readonly string[];
}

export async function stepHistoryJson(
  ctx: AppContext,
  runId: string,
  q: StepHistoryQuery,
): Promise<string> {
  const raw = await readStepsJson(ctx.store, runId, { fromStep: q.fromStep, limit: q.limit });
  const wanted = q.names && q.names.length > 0 ? new Set(q.names) : null;
  let steps: string[] = raw;
  if (wanted) {
    steps = [];
    for (let i = 0; i < raw.length; i += SLICE) {
      if (i > 0) await yieldToLoop();
      for (const [j, entry] of raw.slice(i, i + SLICE).entries()) {
        const source = () =>
          `${keys(ctx.store.prefix).steps(runId)}, record ${i + j + 1} from step ${q.fromStep}`;
        const record = parseStored(StepRecord, entry, source);
        steps.push(JSON.stringify(onlyMetrics(record, wanted)));
      }
    }
  }
  // Steps guardrail rollbacks took back: kept beside the history, never in it.
  const rolledBack = (await readRolledBackSteps(ctx.store, runId))
    .filter((s) => s.step >= q.fromStep)
    .map((s) => (wanted ? onlyMetrics(s, wanted) : s));
  return (
    `{"runId":${JSON.stringify(runId)},"steps":[${steps.join(',')}]` +
    (rolledBack.length > 0 ? `,"rolledBack":${JSON.stringify(rolledBack)}}` : '}')
  );
}
