// The runs this worker holds right now, each with the AbortController behind the executor's
// stopSignal and the reason it was asked to stop (cancel, pause, hand back, or lost).

export type StopKind = 'release' | 'pause' | 'cancel' | 'resync' | 'lost';

export interface StopRequest {
  /**
   * release: checkpoint and hand the run back to the queue (drain with checkpointAndRelease,
   * SIGTERM); pause: checkpoint and end as paused (no job: a resume queues it again); cancel: checkpoint and end as cancelled; resync: Redis lost writes this worker
   * had acknowledged (a failover to a replica that lacked them) — hand the run back so that it
   * resumes from what Redis holds; lost: this worker no longer owns the run (lock lost or
   * another worker took it over) — stop without touching its state.
   */
  kind: StopKind;
  reason: string;
}

/** A later request only replaces an earlier one of lower precedence (lost > resync > cancel >
 * pause > release: a paused run is asked for by its owner, a release only frees the worker). */
const PRECEDENCE: Record<StopKind, number> = {
  release: 0,
  pause: 1,
  cancel: 2,
  resync: 3,
  lost: 4,
};

/** Stops that abandon the step under way (runtime/abortable.ts): the run's outcome does not
 * depend on finishing it. A release (drain, SIGTERM) or a pause lets the step end and
 * checkpoints it. */
const ABANDONS_STEP: ReadonlySet<StopKind> = new Set(['cancel', 'resync', 'lost']);

export class ActiveRun {
  private readonly controller = new AbortController();
  private readonly abandon = new AbortController();
  private request: StopRequest | null = null;

  constructor(
    readonly runId: string,
    readonly kind: string,
    readonly startedAtMs: number,
  ) {}

  get stopSignal(): AbortSignal {
    return this.controller.signal;
  }

  /** Aborted on a stop that abandons the step under way (cancel, resync, lost). */
  get abortSignal(): AbortSignal {
    return this.abandon.signal;
  }

  get stopRequest(): StopRequest | null {
    return this.request;
  }

  /** Asks the executor to stop at its next step boundary (and, for cancel, resync and lost,
   * abandons the step under way). Returns whether anything changed. */
  stop(request: StopRequest): boolean {
    if (this.request && PRECEDENCE[this.request.kind] >= PRECEDENCE[request.kind]) return false;
    this.request = request;
    if (!this.controller.signal.aborted) this.controller.abort(new Error(request.reason));
    if (ABANDONS_STEP.has(request.kind) && !this.abandon.signal.aborted) {
      this.abandon.abort(new Error(request.reason));
    }
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
