// The ExecutorContext of one run: step commits (idempotent, mapped to metrics), checkpoint
// pointers, and the stop signal — with a store check at every step boundary so a cancel whose
// pub/sub message was missed, or a takeover by another worker, still stops the executor.
import { Value } from '@sinclair/typebox/value';
import { StepMetrics, type RunSpec } from '@anneal/protocol';
import { type StoreContext, appendStep, getRun, setCheckpoint } from '@anneal/store';
import type { Logger, TelemetryEmitter } from '@anneal/telemetry';
import type { ExecutorContext, RunResources } from '../executors/types.ts';
import { stepCommittedEvent } from '../executors/metrics.ts';
import type { ActiveRun } from './active-runs.ts';

export interface RunContextDeps {
  store: StoreContext;
  workerId: string;
  telemetry: TelemetryEmitter;
  logger: Logger;
}

function checkMetrics(step: number, metrics: Record<string, number | null>): void {
  const first = Value.Errors(StepMetrics, metrics).First();
  if (first) {
    throw new TypeError(`commitStep(${step}): metrics${first.path}: ${first.message}`);
  }
}

/** At a step boundary: has the run been cancelled, or taken over by another worker? */
async function checkBoundary(deps: RunContextDeps, active: ActiveRun): Promise<void> {
  const run = await getRun(deps.store, active.runId);
  if (!run) return;
  if (run.state === 'running' && run.workerId && run.workerId !== deps.workerId) {
    active.stop({ kind: 'lost', reason: `run taken over by worker ${run.workerId}` });
  } else if (run.cancelRequested) {
    active.stop({ kind: 'cancel', reason: 'cancel requested' });
  }
}

export function createExecutorContext(
  deps: RunContextDeps,
  active: ActiveRun,
  input: {
    spec: RunSpec;
    resources: RunResources;
    resumeFrom: ExecutorContext['resumeFrom'];
    artifactDir: string;
  },
): ExecutorContext {
  const { store, telemetry } = deps;
  const runId = active.runId;
  const logger = deps.logger.child({ runId });
  return {
    runId,
    ...input,
    stopSignal: active.stopSignal,
    async commitStep(step, metrics) {
      checkMetrics(step, metrics);
      const result = await appendStep(store, runId, step, metrics);
      switch (result.status) {
        case 'committed':
          telemetry.emit('step:committed', stepCommittedEvent(runId, step, Date.now(), metrics));
          break;
        case 'duplicate':
          logger.debug({ step }, 'step already committed (resumed run); ignored');
          break;
        case 'not-running':
          active.stop({ kind: 'lost', reason: `run is ${result.state}, no longer running here` });
          break;
        case 'missing':
          throw new Error(`run ${runId} no longer exists`);
      }
      await checkBoundary(deps, active);
    },
    async recordCheckpoint(step, path) {
      const saved = await setCheckpoint(store, runId, { step, path });
      if (saved) logger.info({ step, path }, 'checkpoint recorded');
      else logger.debug({ step, path }, 'checkpoint older than the current pointer; ignored');
    },
  };
}
