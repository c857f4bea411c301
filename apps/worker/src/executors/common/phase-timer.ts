// Wall time of each phase of a step (metric `phase_seconds/<phase>`, telemetry STEP_PHASES).
import { phaseKey, type StepPhase } from '../metrics.ts';

export class PhaseTimer {
  private readonly seconds = new Map<StepPhase, number>();

  /** Runs `fn` and adds its wall time to `phase`. */
  async time<T>(phase: StepPhase, fn: () => Promise<T>): Promise<T> {
    const start = performance.now();
    try {
      return await fn();
    } finally {
      this.add(phase, (performance.now() - start) / 1000);
    }
  }

  add(phase: StepPhase, seconds: number): void {
    this.seconds.set(phase, (this.seconds.get(phase) ?? 0) + seconds);
  }

  get(phase: StepPhase): number {
    return this.seconds.get(phase) ?? 0;
  }

  /** The timed phases as step-record metrics. */
  metrics(): Record<string, number> {
    return Object.fromEntries([...this.seconds].map(([phase, s]) => [phaseKey(phase), s]));
  }
}
