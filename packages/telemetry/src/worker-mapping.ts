// Worker events → anneal_run_* and anneal_worker_* metrics. The step series are written by one
// loop over the step-metric table's bindings (record key → series and label), never per metric;
// an eval step also sets its cell's anneal_run_eval_* gauges (eval-series.ts).
import type { MetricName, MetricType } from './catalogue.ts';
import { EVAL_CELL_SERIES, evalCellLabels } from './eval-series.ts';
import type { TelemetryEvents } from './events.ts';
import { GUARDRAIL_ACTIONS, type Usage } from '@anneal/protocol';
import { SUBSYSTEMS, TOKEN_TYPES, USAGE_ITEMS, type TokenType, type UsageItem } from './labels.ts';
import type { StepMetricTable } from './step-metrics.ts';
import { recordBindings } from '@anneal/protocol';
import type { MetricWriter } from './writer.ts';

/** The protocol's Usage field behind each label value of the anneal_tenant_* series. */
const TOKEN_FIELD: Record<TokenType, keyof Usage> = {
  prompt: 'promptTokens',
  completion: 'completionTokens',
  trained: 'trainedTokens',
  scored: 'scoredTokens',
};
const ITEM_FIELD: Record<UsageItem, keyof Usage> = {
  prompt_tokens: 'promptTokens',
  completion_tokens: 'completionTokens',
  trained_tokens: 'trainedTokens',
  tool_calls: 'toolCalls',
  judge_calls: 'judgeCalls',
  scored_tokens: 'scoredTokens',
  slot_seconds: 'slotSeconds',
};

export interface WorkerIdentity {
  pool: string;
  /** Worker id (pod or container hostname). */
  id: string;
}

type Handlers = { [K in keyof TelemetryEvents]?: (payload: TelemetryEvents[K]) => void };

/** One record key and the series (and label value) it sets. */
interface StepWrite {
  key: string;
  name: MetricName;
  type: MetricType;
  labels: Readonly<Record<string, string>>;
}

/** Every (record key → series) binding of the table's rows that have a series. */
export function stepWrites(table: StepMetricTable): StepWrite[] {
  return Object.values(table).flatMap((row) => {
    const series = row.series;
    if (!series) return [];
    return recordBindings(row).map((b) => ({
      key: b.key,
      name: series.name as MetricName,
      type: series.type,
      labels: b.label ? { [b.label.name]: b.label.value } : {},
    }));
  });
}

function requireCount(key: string, value: number): number {
  if (!Number.isFinite(value) || value < 0) {
    throw new RangeError(`step:committed ${key} must be a finite count >= 0 (got ${value})`);
  }
  return value;
}

/**
 * Gauges hold the value at this step and are set again by a replayed step; counters and
 * histograms accumulate, so they are written only the first time a step number commits.
 */
function writeStep(
  w: MetricWriter,
  writes: readonly StepWrite[],
  e: TelemetryEvents['step:committed'],
  accumulate: boolean,
): void {
  const run = { run_id: e.runId };
  w.set('anneal_run_step', run, e.step);
  w.set('anneal_run_last_step_timestamp_seconds', run, e.atMs / 1000);
  for (const pass of ['gauges', 'accumulators'] as const) {
    if (pass === 'accumulators' && !accumulate) return;
    for (const x of writes) {
      if ((x.type === 'gauge') !== (pass === 'gauges')) continue;
      const value = e.metrics[x.key];
      if (value === undefined || value === null) continue;
      const labels = { ...run, ...x.labels };
      if (x.type === 'gauge') w.set(x.name, labels, value);
      else if (x.type === 'counter') w.inc(x.name, labels, requireCount(x.key, value));
      else w.observe(x.name, labels, value);
    }
  }
}

/**
 * An eval step's cell gauges, labelled by its checkpoint and budget (docs/evaluation.md "Eval
 * gauges and the Evaluation row"): every cell keeps its own series, where the run's plain gauges
 * hold the last cell only. A null value (no prices, no calls) leaves the series unset.
 */
function writeEvalCell(
  w: MetricWriter,
  e: TelemetryEvents['step:committed'],
  cell: { checkpoint: string; budget: string },
): void {
  const labels = { run_id: e.runId, ...cell };
  for (const s of EVAL_CELL_SERIES) {
    const value = e.metrics[s.key];
    if (typeof value === 'number') w.set(s.name, labels, value);
  }
}

export interface RunSeriesControl {
  /** Removes the run's series after the grace period (so the last values get scraped). */
  scheduleRemoval(runId: string): void;
  cancelRemoval(runId: string): void;
}

export function workerHandlers(
  w: MetricWriter,
  worker: WorkerIdentity,
  runs: RunSeriesControl,
  steps: StepMetricTable,
): Handlers {
  const writes = stepWrites(steps);
  const me = { pool: worker.pool, worker: worker.id };
  // Error and retry counters exist at 0 from the start (one series per subsystem), so their
  // rates read 0 on a healthy worker instead of "no data", and the first error is a visible
  // increase rather than a series appearing.
  for (const subsystem of SUBSYSTEMS) {
    w.inc('anneal_worker_errors_total', { ...me, subsystem }, 0);
    w.inc('anneal_worker_retries_total', { ...me, subsystem }, 0);
  }
  /** Highest step number whose accumulators were written, per run (steps commit idempotently). */
  const lastStep = new Map<string, number>();
  return {
    'run:started': (e) => {
      runs.cancelRemoval(e.runId);
      w.set('anneal_run_info', { run_id: e.runId, kind: e.kind, pool: e.pool }, 1);
      w.set('anneal_run_last_step_timestamp_seconds', { run_id: e.runId }, e.atMs / 1000);
      // At 0 from the start, so the first firing is an increase the alert rule sees.
      for (const action of GUARDRAIL_ACTIONS) {
        w.inc('anneal_run_guardrail_firings_total', { run_id: e.runId, action }, 0);
      }
    },
    'run:ended': (e) => {
      lastStep.delete(e.runId);
      runs.scheduleRemoval(e.runId);
    },
    'step:committed': (e) => {
      if (!Number.isInteger(e.step) || e.step < 0) {
        throw new RangeError(`step:committed.step must be an integer >= 0 (got ${e.step})`);
      }
      // checked before any write, so a refused record leaves no partial step behind
      const cell = evalCellLabels(e.metrics);
      const previous = lastStep.get(e.runId);
      const first = previous === undefined || e.step > previous;
      writeStep(w, writes, e, first);
      if (cell) writeEvalCell(w, e, cell);
      if (first) lastStep.set(e.runId, e.step);
    },
    'guardrail:fired': (e) => {
      w.inc('anneal_run_guardrail_firings_total', { run_id: e.runId, action: e.action });
      // The re-run steps after a rollback sample and train again: their counters count again.
      if (e.restored !== undefined) lastStep.set(e.runId, e.restored.step);
    },
    'worker:heartbeat': (e) =>
      w.set('anneal_worker_heartbeat_timestamp_seconds', me, e.atMs / 1000),
    'worker:slots': (e) => {
      w.set('anneal_worker_slots', me, e.total);
      w.set('anneal_worker_slots_busy', me, e.busy);
    },
    'fleet:served': (e) => {
      const labels = { run_id: e.runId, endpoint: e.endpoint };
      w.inc('anneal_run_fleet_requests_total', labels);
      w.inc('anneal_run_fleet_tokens_total', labels, e.tokens);
      w.observe('anneal_run_fleet_wait_seconds', labels, e.waitedSeconds);
    },
    'request:started': (e) =>
      w.inc('anneal_worker_inflight_requests', { ...me, engine: e.engine }, 1),
    'request:finished': (e) => {
      w.inc('anneal_worker_inflight_requests', { ...me, engine: e.engine }, -1);
      const labels = { ...me, engine: e.engine, outcome: e.outcome };
      w.observe('anneal_worker_engine_request_duration_seconds', labels, e.durationSeconds);
    },
    'usage:metered': (e) => {
      const tenant = { ...me, tenant: e.tenant };
      for (const token_type of TOKEN_TYPES) {
        w.inc(
          'anneal_tenant_tokens_total',
          { ...tenant, token_type },
          e.usage[TOKEN_FIELD[token_type]],
        );
      }
      w.inc('anneal_tenant_tool_calls_total', tenant, e.usage.toolCalls);
      w.inc('anneal_tenant_judge_calls_total', tenant, e.usage.judgeCalls);
      w.inc('anneal_tenant_slot_seconds_total', tenant, e.usage.slotSeconds);
      for (const item of USAGE_ITEMS) {
        w.inc('anneal_tenant_cost_usd_total', { ...tenant, item }, e.costUsd[ITEM_FIELD[item]]);
      }
    },
    'attempt:failed': (e) => {
      w.inc('anneal_worker_errors_total', { ...me, subsystem: e.subsystem });
      if (e.willRetry) w.inc('anneal_worker_retries_total', { ...me, subsystem: e.subsystem });
    },
  };
}
