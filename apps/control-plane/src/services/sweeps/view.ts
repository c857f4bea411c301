// GET /v1/sweeps/{id} and GET /v1/sweeps: a sweep record with what its runs are doing — runs in
// each state, each run's grid values and state, and the best run by the sweep's `select`
// metric (its value at each run's latest committed step).
import {
  RUN_STATES,
  type RunState,
  type SweepResource,
  type SweepSummary,
  TERMINAL_STATES,
} from '@anneal/protocol';
import { type SweepRecord, latestSteps, runStates } from '@anneal/store';
import type { AppContext } from '../../context.ts';

type Counts = Record<RunState, number>;
type States = Awaited<ReturnType<typeof runStates>>;

function head(record: SweepRecord, states: States) {
  const counts = Object.fromEntries(RUN_STATES.map((s) => [s, 0])) as Counts;
  for (const run of states) if (run) counts[run.state] += 1;
  const { runs: _runs, ...rest } = record;
  return {
    ...rest,
    counts,
    done: states.every((run) => run === null || TERMINAL_STATES.has(run.state)),
  };
}

/** The sweep as GET /v1/sweeps/{id} returns it. A run its submission did not get to create
 * (an interrupted submission, until a replay of its Idempotency-Key) is not listed. */
export async function sweepView(ctx: AppContext, record: SweepRecord): Promise<SweepResource> {
  const ids = record.runs.map((r) => r.id);
  const select = record.select;
  const [states, latest] = await Promise.all([
    runStates(ctx.store, ids),
    select ? latestSteps(ctx.store, ids) : Promise.resolve([]),
  ]);
  const runs: SweepResource['runs'] = [];
  let best: SweepResource['best'] = null;
  for (const [i, run] of record.runs.entries()) {
    const state = states[i];
    if (!state) continue;
    const entry: SweepResource['runs'][number] = { id: run.id, values: run.values, ...state };
    if (select) {
      const value = latest[i]?.metrics[select.metric];
      const metric = typeof value === 'number' && Number.isFinite(value) ? value : null;
      entry.metric = metric;
      const better =
        metric !== null &&
        (best === null || (select.mode === 'max' ? metric > best.value : metric < best.value));
      if (better) best = { runId: run.id, value: metric };
    }
    runs.push(entry);
  }
  return { ...head(record, states), runs, best };
}

/** The sweeps of a page as GET /v1/sweeps lists them (counts, not runs). */
export async function sweepSummaries(
  ctx: AppContext,
  records: readonly SweepRecord[],
): Promise<SweepSummary[]> {
  const states = await runStates(
    ctx.store,
    records.flatMap((r) => r.runs.map((run) => run.id)),
  );
  let next = 0;
  return records.map((record) => {
    const own = states.slice(next, next + record.runs.length);
    next += record.runs.length;
    return { ...head(record, own), runCount: record.runs.length };
  });
}
