// The ExecutorContext of one run: step commits (idempotent, mapped to metrics), checkpoint
// pointers, pauses the run asks for itself, and the stop signal — with a store check at every
// step boundary so a cancel or pause whose pub/sub message was missed, or a takeover by another
// worker, still stops the executor.
import { mkdirSync } from 'node:fs';
import { Value } from '@sinclair/typebox/value';
import { WireStepMetrics, type GuardrailFiring, type RunSpec } from '@anneal/protocol';
import {
  type StoreContext,
  appendRunNotice,
  appendStep,
  getRun,
  markPauseRequested,
  pauseReason,
  readSteps,
  recordGuardrailFirings,
  rollbackRun,
  setCheckpoint,
  setSafeCheckpoint,
} from '@anneal/store';
import { stepRecordError, type Logger, type TelemetryEmitter } from '@anneal/telemetry';
import type { ExecutorContext, GuardrailHooks, RunResources } from '../executors/types.ts';
import { retentionOf, retireCheckpoints } from './retention.ts';
import { stepCommittedEvent } from '../executors/metrics.ts';
import type { ActiveRun } from './active-runs.ts';
import type { AttemptMeter } from './metering.ts';
import { requestedStop } from './control.ts';

export interface RunContextDeps {
  store: StoreContext;
  workerId: string;
  telemetry: TelemetryEmitter;
  logger: Logger;
}

/** The highest step this attempt knows the run holds (committed here, or resumed after): a run
 * succeeds only with steps 1..highest all in Redis. */
export class StepProgress {
  highest: number;
  constructor(resumedAt = 0) {
    this.highest = resumedAt;
  }
  note(step: number): void {
    if (step > this.highest) this.highest = step;
  }
}

export const DATA_LOST_NOTICE = 'redis_data_lost';

/**
 * A step record must fit protocol's wire envelope (WireStepMetrics) and the schema telemetry derives
 * from the step-metric table (known keys: counts, durations and ratios never negative).
 */
export function checkMetrics(step: number, metrics: Record<string, number | null>): void {
  // The common failure first, in plain words: a NaN or infinite loss or norm from the trainer.
  const nonFinite = Object.entries(metrics).find(
    ([, value]) => typeof value === 'number' && !Number.isFinite(value),
  );
  if (nonFinite) {
    throw new TypeError(
      `commitStep(${step}): metrics/${nonFinite[0]} is ${String(nonFinite[1])} (not finite): the step is not recorded`,
    );
  }
  const first = Value.Errors(WireStepMetrics, metrics).First();
  const problem = first ? `metrics${first.path}: ${first.message}` : stepRecordError(metrics);
  if (problem) throw new TypeError(`commitStep(${step}): ${problem}`);
}

/** At a step boundary: has the run been cancelled, or taken over by another worker? */
async function checkBoundary(deps: RunContextDeps, active: ActiveRun): Promise<void> {
  const run = await getRun(deps.store, active.runId);
  if (!run) return;
  if (run.state === 'running' && run.workerId && run.workerId !== deps.workerId) {
    active.stop({ kind: 'lost', reason: `run taken over by worker ${run.workerId}` });
  } else if (run.cancelRequested || run.pause) {
    const stop = await requestedStop(deps.store, active.runId); // a cancel with its asker's text
    if (stop) active.stop(stop);
  }
}

export function createExecutorContext(
  deps: RunContextDeps,
  active: ActiveRun,
  input: {
    spec: RunSpec;
    resources: RunResources;
    resumeFrom: ExecutorContext['resumeFrom'];
    /** The run's rules and its record's guardrail fields (training kinds with any rule). */
    guardrails?: Pick<
      GuardrailHooks,
      'policy' | 'rollbacks' | 'learningRateScale' | 'safeCheckpoint'
    >;
    /** Made on the executor's first read of `ctx.artifactDir`, not per run: most runs write no
     * artifact, and a mkdir per run was a measurable share of a worker's CPU
     * (docs/performance.md "Scheduling at fleet scale"). */
    artifactDir: string;
    /** Absent: steps are committed unmetered (tools and tests that drive an executor alone). */
    metering?: AttemptMeter;
  },
  /** The attempt that started the run here: every write is fenced to it (a worker that lost the
   * run while it was cut off from Redis cannot overwrite its new owner's steps or checkpoint). */
  attempt: number,
  progress: StepProgress = new StepProgress(input.resumeFrom?.step ?? 0),
): ExecutorContext {
  const { store, telemetry } = deps;
  const runId = active.runId;
  const fence = { attempt };
  const lost = async (what: string, state: string, owner: number) => {
    // An attempt older than this one: Redis lost the start of this attempt (a failover), not a
    // takeover by another worker (which would hold a newer one).
    if (owner < attempt)
      return dataLost(`the start of attempt ${attempt} (run is ${state}, attempt ${owner})`);
    active.stop({
      kind: 'lost',
      reason: `${what} refused: run is ${state} in attempt ${owner}, this worker holds attempt ${attempt}`,
    });
  };
  const logger = deps.logger.child({ runId });
  /** Redis no longer holds what this worker wrote (a failover promoted a replica that lacked
   * it): said on the run's stream, and the run is handed back to resume from what Redis has. */
  const dataLost = async (what: string) => {
    if (active.stopRequest?.kind === 'resync') return; // said once per attempt
    const message =
      `Redis lost ${what}, acknowledged before (a failover promoted a replica that lacked it); ` +
      'this attempt stops and the run resumes from the checkpoint Redis holds';
    logger.error({ what }, message);
    active.stop({ kind: 'resync', reason: `Redis lost ${what}` });
    await appendRunNotice(store, runId, { code: DATA_LOST_NOTICE, message }).catch(
      (error: unknown) => logger.warn({ err: String(error) }, 'could not record the notice'),
    );
  };
  const { artifactDir, guardrails, metering, ...rest } = input;
  let budgetTold = false;
  const emitFiring = (firing: GuardrailFiring) =>
    telemetry.emit('guardrail:fired', { runId, ...firing });
  /** A guardrail write refused because the run is no longer this attempt's. */
  const guardLost = async (
    what: string,
    result: { status: string; attempt?: number; state?: string },
  ) => {
    if (result.status === 'fenced') await lost(what, result.state ?? '', result.attempt ?? 0);
    else if (result.status === 'missing') throw new Error(`run ${runId} no longer exists`);
    else active.stop({ kind: 'lost', reason: `${what} refused: ${result.status}` });
  };
  const pause: ExecutorContext['pause'] = async (cause) => {
    const result = await markPauseRequested(store, runId, cause, fence);
    logger.info({ by: cause.by, reason: cause.reason, result }, 'pause asked for by the run');
    if (result === 'requested' || result === 'pending') {
      active.stop({ kind: 'pause', reason: pauseReason(cause) });
    }
  };
  const hooks: GuardrailHooks | undefined = guardrails && {
    ...guardrails,
    pause: (reason) => pause({ by: 'guardrail', reason }),
    async record(key, firings, fired) {
      const usage = fired && metering?.report(fired.metrics, input.spec.budget?.maxUsd);
      const result = await recordGuardrailFirings(store, runId, key, firings, fence, usage);
      if (result.status === 'recorded' && metering && usage)
        telemetry.emit('usage:metered', metering.added(usage));
      if (result.status === 'recorded') {
        for (const f of firings) {
          logger.warn({ rule: f.rule.name, step: f.step, action: f.action }, f.reason);
          emitFiring(f);
        }
      } else if (result.status !== 'duplicate') {
        await guardLost(`guardrail firing ${key}`, result);
      }
    },
    async markSafe(point) {
      const result = await setSafeCheckpoint(store, runId, point, fence);
      if (result.status !== 'recorded') await guardLost(`safe checkpoint ${point.step}`, result);
    },
    async rollback(request) {
      // The step that fired was sampled and trained: metered with the rollback, once.
      const usage = metering?.report(request.fired.metrics, input.spec.budget?.maxUsd);
      const result = await rollbackRun(
        store,
        runId,
        { ...request, ...(usage && { usage }), workerId: deps.workerId },
        fence,
      );
      if (result.status === 'rolled-back' && metering && usage)
        telemetry.emit('usage:metered', metering.added(usage));
      if (result.status === 'rolled-back' || result.status === 'duplicate') {
        logger.warn(
          { step: request.firing.step, to: request.firing.restored },
          request.firing.reason,
        );
        if (result.status === 'rolled-back') emitFiring(request.firing);
        return true;
      }
      await guardLost(`rollback ${request.firing.rollbacks}`, result);
      return false;
    },
  };
  let artifactDirMade = false;
  return {
    runId,
    ...rest,
    get artifactDir() {
      if (!artifactDirMade) {
        try {
          mkdirSync(artifactDir, { recursive: true });
        } catch (error) {
          throw new Error(`run ${runId}: cannot create its artifact directory ${artifactDir}`, {
            cause: error,
          });
        }
        artifactDirMade = true;
      }
      return artifactDir;
    },
    stopSignal: active.stopSignal,
    ...(hooks && { guardrails: hooks }),
    attempt,
    pause,
    // Up to the store's read limit: an eval has at most 16 checkpoints × 101 budgets steps.
    committedSteps: () => readSteps(store, runId, { limit: 100_000 }),
    async commitStep(step, metrics, rollbacks) {
      checkMetrics(step, metrics);
      // Steps are committed in order: the one before must still be there.
      const previous = step > 1 ? { previous: step - 1 } : {};
      const usage = metering?.report(metrics, input.spec.budget?.maxUsd);
      const result = await appendStep(store, runId, step, metrics, {
        ...fence,
        ...previous,
        ...(rollbacks && { rollbacks }),
        ...(usage && { usage }),
      });
      switch (result.status) {
        case 'committed':
          progress.note(step);
          telemetry.emit('step:committed', stepCommittedEvent(runId, step, Date.now(), metrics));
          if (metering && usage) telemetry.emit('usage:metered', metering.added(usage));
          if (metering && result.budget && !budgetTold) {
            budgetTold = true;
            // Paused at this step boundary (after the step's checkpoint), like any pause.
            const reason = await metering.options.onBudget(result.budget, step);
            await pause({ by: 'budget', reason });
          }
          break;
        case 'duplicate':
          progress.note(step);
          logger.debug({ step }, 'step already committed (resumed run); ignored');
          break;
        case 'gap':
          await dataLost(`step ${step - 1} (it holds steps up to ${result.lastStep ?? 'none'})`);
          return 'refused';
        case 'not-running':
          active.stop({ kind: 'lost', reason: `run is ${result.state}, no longer running here` });
          await checkBoundary(deps, active);
          return 'refused';
        case 'fenced':
          logger.warn({ step, owner: result.attempt }, 'step write fenced: run lost');
          await lost(`step ${step}`, result.state, result.attempt);
          return 'refused';
        case 'missing':
          throw new Error(`run ${runId} no longer exists`);
      }
      await checkBoundary(deps, active);
      return result.status;
    },
    retireCheckpoints: () => retireCheckpoints(store, runId, retentionOf(input.spec), fence),
    async notice(notice) {
      logger.warn({ code: notice.code }, notice.message);
      await appendRunNotice(store, runId, notice);
    },
    async recordCheckpoint(step, path, samplerPath) {
      // Only at a step the run holds (step 0: nothing done yet, nothing to hold).
      const saved = await setCheckpoint(
        store,
        runId,
        { step, path, ...(samplerPath !== undefined && { samplerPath }) },
        { ...fence, requireStep: step > 0 },
      );
      if (saved === 'saved') logger.info({ step, path }, 'checkpoint recorded');
      else if (saved === 'uncommitted')
        await dataLost(`step ${step} (checkpoint ${path} not recorded)`);
      else if (saved === 'stale') {
        logger.debug({ step, path }, 'checkpoint older than the current pointer; ignored');
      } else {
        logger.warn({ step, path }, 'checkpoint pointer write fenced: run lost');
        const run = await getRun(store, runId);
        await lost(`checkpoint ${step}`, run?.state ?? 'missing', run?.attempt ?? 0);
      }
    },
  };
}
