// The runs this worker holds right now, each with the AbortController behind the executor's
// stopSignal and the reason it was asked to stop (cancel, hand back, or lost).

export type StopKind = 'release' | 'cancel' | 'resync' | 'lost';

export interface StopRequest {
  /**
   * release: checkpoint and hand the run back to the queue (drain with checkpointAndRelease,
   * SIGTERM); cancel: checkpoint and end as cancelled; resync: Redis lost writes this worker
   * had acknowledged (a failover to a replica that lacked them) — hand the run back so that it
   * resumes from what Redis holds; lost: this worker no longer owns the run (lock lost or
   * another worker took it over) — stop without touching its state.
   */
  kind: StopKind;
  reason: string;
}

/** A later request only replaces an earlier one of lower precedence (lost > resync > cancel >
 * release). */
const PRECEDENCE: Record<StopKind, number> = { release: 0, cancel: 1, resync: 2, lost: 3 };

export class ActiveRun {
  private readonly controller = new AbortController();
  private request: StopRequest | null = null;

  constructor(
    readonly runId: string,
    readonly kind: string,
    readonly startedAtMs: number,
  ) {}

  get stopSignal(): AbortSignal {
    return this.controller.signal;
  }

  get stopRequest(): StopRequest | null {
    return this.request;
  }

  /** Asks the executor to stop at its next step boundary. Returns whether anything changed. */
  stop(request: StopRequest): boolean {
    if (this.request && PRECEDENCE[this.request.kind] >= PRECEDENCE[request.kind]) return false;
    this.request = request;
    if (!this.controller.signal.aborted) this.controller.abort(new Error(request.reason));
    return true;
  }
}

export class ActiveRuns {
  private readonly runs = new Map<string, ActiveRun>();

  add(run: ActiveRun): void {
    if (this.runs.has(run.runId)) throw new Error(`run ${run.runId} is already held`);
    this.runs.set(run.runId, run);
  }

  get(runId: string): ActiveRun | undefined {
    return this.runs.get(runId);
  }

  remove(runId: string): void {
    this.runs.delete(runId);
  }

  ids(): string[] {
    return [...this.runs.keys()];
  }

  get size(): number {
    return this.runs.size;
  }

  stopAll(request: StopRequest): void {
    for (const run of this.runs.values()) run.stop(request);
  }
}
