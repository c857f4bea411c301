// What each executor call saw, recorded in the worker process and sent to the bench on request:
// the run (or baseline job) id, the worker, and wall-clock start/end in milliseconds with
// sub-millisecond precision (performance.timeOrigin + now(), comparable across processes).
export interface Execution {
  runId: string;
  workerId: string;
  startMs: number;
  endMs: number;
}

export const wallClockMs = (): number => performance.timeOrigin + performance.now();

/** CPU time this process has used so far (user + system), in milliseconds. */
export function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** Requests from the bench to a child process (IPC). */
export type ChildRequest =
  | { type: 'report' }
  | { type: 'stop' }
  /** Start `count` more Anneal workers in this process. */
  | { type: 'grow'; count: number }
  /** Start / stop the plain BullMQ baseline worker of this process. */
  | { type: 'baseline'; queue: string; prefix: string; concurrency: number }
  | { type: 'baseline-stop' }
  /** Lets the runs held `until released` end. */
  | { type: 'release' };

export type ChildMessage =
  | { type: 'ready'; workers: number }
  | { type: 'report'; executions: Execution[]; cpuMs: number }
  | { type: 'done' };
