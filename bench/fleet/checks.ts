// The bench's correctness checks, as pure functions over what it recorded: executions per run
// id, each tenant's concurrency over time, the order in which queued runs started.
import type { Execution } from './executions.ts';

export interface OnceResult {
  expected: number;
  executedOnce: number;
  missing: string[];
  /** Run ids executed more than once, with their count. */
  repeated: Array<{ runId: string; times: number }>;
  /** Executions of run ids the bench never submitted. */
  unknown: string[];
}

export function exactlyOnce(
  submitted: readonly string[],
  executions: readonly Execution[],
): OnceResult {
  const times = new Map<string, number>();
  for (const e of executions) times.set(e.runId, (times.get(e.runId) ?? 0) + 1);
  const expected = new Set(submitted);
  return {
    expected: expected.size,
    executedOnce: [...expected].filter((id) => times.get(id) === 1).length,
    missing: [...expected].filter((id) => !times.has(id)),
    repeated: [...times].filter(([, n]) => n > 1).map(([runId, n]) => ({ runId, times: n })),
    unknown: [...times.keys()].filter((id) => !expected.has(id)),
  };
}

export const onceHolds = (r: OnceResult): boolean =>
  r.executedOnce === r.expected && r.repeated.length === 0 && r.unknown.length === 0;

/** Largest number of one group's executions that overlapped in time (sweep over start/end). */
export function maxConcurrent(
  executions: readonly Execution[],
  groupOf: (runId: string) => string | undefined,
): Map<string, number> {
  const events = new Map<string, Array<[number, number]>>();
  for (const e of executions) {
    const group = groupOf(e.runId);
    if (group === undefined) continue;
    const list = events.get(group) ?? [];
    list.push([e.startMs, 1], [e.endMs, -1]);
    events.set(group, list);
  }
  const out = new Map<string, number>();
  for (const [group, list] of events) {
    // At equal times an end comes first: back-to-back runs do not overlap.
    list.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    let now = 0;
    let max = 0;
    for (const [, delta] of list) {
      now += delta;
      max = Math.max(max, now);
    }
    out.set(group, max);
  }
  return out;
}

export interface PriorityResult {
  /** (lower, higher) pairs of one pool where the lower-priority run started first. */
  inversions: number;
  /** The most higher-priority runs that started after any one lower-priority run. */
  maxOvertaken: number;
  /** Allowed: a run popped from the queue before another may still be starting on another slot
   * when that one starts, so at most (slots of the pool - 1) can start after it. */
  allowed: number;
}

/**
 * `starts`: run ids of one pool in the order Redis recorded their `running` transitions; all of
 * them were queued together, before any slot of the pool was free.
 */
export function priorityOrder(
  starts: readonly string[],
  priorityOf: (runId: string) => number,
  poolSlots: number,
): PriorityResult {
  let inversions = 0;
  let maxOvertaken = 0;
  starts.forEach((runId, i) => {
    const p = priorityOf(runId);
    const overtaken = starts.slice(i + 1).filter((later) => priorityOf(later) > p).length;
    inversions += overtaken;
    maxOvertaken = Math.max(maxOvertaken, overtaken);
  });
  return { inversions, maxOvertaken, allowed: poolSlots - 1 };
}

export function percentile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return (
    sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN
  );
}
