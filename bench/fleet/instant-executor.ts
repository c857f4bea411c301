// The bench's executor: does no work, and records each call, so that the bench counts
// executions per run id itself instead of trusting the scheduler's own bookkeeping. The spec's
// `hold` label keeps a slot busy: a number of milliseconds (the tenant-cap phase), or `release`
// — until the bench releases this process's held runs (the priority phase's blockers).
import { setTimeout as sleep } from 'node:timers/promises';
import type { Executor, ExecutorResult } from '@anneal/worker';
import { type Execution, wallClockMs } from './executions.ts';

export const HOLD_LABEL = 'hold';
export const UNTIL_RELEASED = 'release' as const;

export function instantExecutor(
  workerId: string,
  log: Execution[],
  released: () => Promise<void>,
): Executor {
  return async (ctx): Promise<ExecutorResult> => {
    const startMs = wallClockMs();
    const hold = ctx.spec.labels[HOLD_LABEL] ?? '0';
    if (hold === UNTIL_RELEASED) await released();
    else if (Number(hold) > 0) await sleep(Number(hold));
    log.push({ runId: ctx.runId, workerId, startMs, endMs: wallClockMs() });
    return { summary: {}, finalCheckpoint: null, stopped: false };
  };
}
