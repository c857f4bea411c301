// Every `anneal_*` metric. The per-run step series (loss, reward, KL, …) are derived from the
// step-metric table (step-metrics.ts), whose rows also give the step record its keys; the eval
// cell gauges come from eval-series.ts; the rest are declared here. docs/metrics.md is rendered from both
// (`npm run gen:metrics-doc -w @anneal/telemetry`); a test fails when the two drift.
// Naming follows Prometheus: base units, unit suffix, `_total` on counters only; histograms,
// never summaries. Per-run series carry `run_id` and are removed when the run ends.
import { RUN_STATES } from '@anneal/protocol';
import { evalCellDefinitions, type EvalCellSeriesName } from './eval-series.ts';
import { QUEUE_STATES, WORKER_STATES, type LabelName } from './labels.ts';
import { STEP_METRICS, type StepMetricTable } from './step-metrics.ts';
import { keyPattern } from '@anneal/protocol';

import type { MetricDefinition } from './metric-types.ts';

export type { MetricDefinition, MetricScope, MetricType, MetricUnit } from './metric-types.ts';

const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
const ENGINE_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 180, 600];
/** A request waits for its share from nothing (capacity free) to a step's length. */
const FLEET_WAIT_BUCKETS = [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
const QUEUE_WAIT_BUCKETS = [1, 5, 15, 60, 300, 900, 1800, 3600, 7200, 21600, 86400];

/** Per-run series that are not step-record values: the run's identity and its progress. */
const RUN_METRICS = [
  // ── per run (worker; label run_id; removed when the run ends) ──────────────────────────
  {
    name: 'anneal_run_info',
    type: 'gauge',
    unit: 'none',
    scope: 'run',
    labels: ['run_id', 'kind', 'pool'],
    help: 'Always 1 while a worker holds the run; carries its kind and pool for joins.',
    emittedBy: ['worker'],
  },
  {
    name: 'anneal_run_step',
    type: 'gauge',
    unit: 'none',
    scope: 'run',
    labels: ['run_id'],
    help: 'Number of the last committed step.',
    emittedBy: ['worker'],
  },
  {
    name: 'anneal_run_last_step_timestamp_seconds',
    type: 'gauge',
    unit: 'seconds',
    scope: 'run',
    labels: ['run_id'],
    help: 'Unix time of the last committed step (the run start until the first step commits).',
    emittedBy: ['worker'],
  },
  {
    name: 'anneal_run_guardrail_firings_total',
    type: 'counter',
    unit: 'none',
    scope: 'run',
    labels: ['run_id', 'action'],
    help: 'Guardrail rules that fired on the run, by the action taken (docs/guardrails.md).',
    emittedBy: ['worker'],
  },
  // ── per run and inference endpoint: its fair share (docs/operations.md "Fair share of an
  // endpoint"); runs × the endpoints each uses (one or two), removed with the run ──────────
  {
    name: 'anneal_run_fleet_requests_total',
    type: 'counter',
    unit: 'none',
    scope: 'run',
    labels: ['run_id', 'endpoint'],
    help: 'Rollout requests the run was served inside its fair share of the endpoint.',
    emittedBy: ['worker'],
  },
  {
    name: 'anneal_run_fleet_tokens_total',
    type: 'counter',
    unit: 'tokens',
    scope: 'run',
    labels: ['run_id', 'endpoint'],
    help: 'Tokens generated for the run on the endpoint; its share is this over the sum by endpoint.',
    emittedBy: ['worker'],
  },
  {
    name: 'anneal_run_fleet_wait_seconds',
    type: 'histogram',
    unit: 'seconds',
    scope: 'run',
    labels: ['run_id', 'endpoint'],
    help: "Time a rollout request waited for the run's fair share of the endpoint before it was sent.",
    emittedBy: ['worker'],
    buckets: FLEET_WAIT_BUCKETS,
  },
] as const satisfies readonly MetricDefinition[];

/** Every metric other than the step series (those are derived from STEP_METRICS). */
const PROCESS_METRICS = [
  // ── per worker process (labels pool, worker) ──────────────────────────────────────────
  {
    name: 'anneal_worker_heartbeat_timestamp_seconds',
    type: 'gauge',
    unit: 'seconds',
    scope: 'worker',
    labels: ['pool', 'worker'],
    help: 'Unix time of the worker’s last successful heartbeat to the registry in Redis.',
    emittedBy: ['worker'],
  },
  {
    name: 'anneal_worker_slots',
    type: 'gauge',
    unit: 'none',
    scope: 'worker',
    labels: ['pool', 'worker'],
    help: 'Run slots the worker offers.',
    emittedBy: ['worker'],
  },
  {
    name: 'anneal_worker_slots_busy',
    type: 'gauge',
    unit: 'none',
    scope: 'worker',
    labels: ['pool', 'worker'],
    help: 'Run slots currently holding a run.',
    emittedBy: ['worker'],
  },
  {
    name: 'anneal_worker_inflight_requests',
    type: 'gauge',
    unit: 'none',
    scope: 'worker',
    labels: ['pool', 'worker', 'engine'],
    help: 'Requests the worker has in flight to each engine.',
    emittedBy: ['worker'],
  },
  {
    name: 'anneal_worker_engine_request_duration_seconds',
    type: 'histogram',
    unit: 'seconds',
    scope: 'worker',
    labels: ['pool', 'worker', 'engine', 'outcome'],
    help: 'Duration of engine requests as seen by the worker (retries are separate requests).',
    emittedBy: ['worker'],
    buckets: ENGINE_BUCKETS,
  },
  {
    name: 'anneal_worker_errors_total',
    type: 'counter',
    unit: 'none',
    scope: 'worker',
    labels: ['pool', 'worker', 'subsystem'],
    help: 'Failed attempts by subsystem, whether or not they were retried.',
    emittedBy: ['worker'],
  },
  {
    name: 'anneal_worker_retries_total',
    type: 'counter',
    unit: 'none',
    scope: 'worker',
    labels: ['pool', 'worker', 'subsystem'],
    help: 'Retries scheduled after a failed attempt, by subsystem.',
    emittedBy: ['worker'],
  },
  // ── usage by tenant (worker; metered once per committed step, docs/usage.md) ──────────
  {
    name: 'anneal_tenant_tokens_total',
    type: 'counter',
    unit: 'tokens',
    scope: 'worker',
    labels: ['pool', 'worker', 'tenant', 'token_type'],
    help: 'Tokens sampled (prompt, completion), trained, and scored by the reward model for the tenant’s runs; sum by tenant.',
    emittedBy: ['worker'],
  },
  {
    name: 'anneal_tenant_tool_calls_total',
    type: 'counter',
    unit: 'none',
    scope: 'worker',
    labels: ['pool', 'worker', 'tenant'],
    help: 'Tool calls of the tenant’s runs that reached the search backend.',
    emittedBy: ['worker'],
  },
  {
    name: 'anneal_tenant_judge_calls_total',
    type: 'counter',
    unit: 'none',
    scope: 'worker',
    labels: ['pool', 'worker', 'tenant'],
    help: 'Requests of the tenant’s runs to the LLM judge.',
    emittedBy: ['worker'],
  },
  {
    name: 'anneal_tenant_slot_seconds_total',
    type: 'counter',
    unit: 'seconds',
    scope: 'worker',
    labels: ['pool', 'worker', 'tenant'],
    help: 'Seconds the tenant’s runs held worker slots.',
    emittedBy: ['worker'],
  },
  {
    name: 'anneal_tenant_cost_usd_total',
    type: 'counter',
    unit: 'none',
    scope: 'worker',
    labels: ['pool', 'worker', 'tenant', 'item'],
    help: 'USD the tenant’s runs cost at the operator price table, by item.',
    emittedBy: ['worker'],
  },
  // ── control plane ─────────────────────────────────────────────────────────────────────
  {
    name: 'anneal_http_requests_total',
    type: 'counter',
    unit: 'none',
    scope: 'control-plane',
    labels: ['route', 'method', 'status_code'],
    help: 'HTTP requests answered by the control plane.',
    emittedBy: ['control-plane'],
  },
  {
    name: 'anneal_http_request_duration_seconds',
    type: 'histogram',
    unit: 'seconds',
    scope: 'control-plane',
    labels: ['route', 'method'],
    help: 'Control-plane HTTP request latency, from request received to response sent.',
    emittedBy: ['control-plane'],
    buckets: HTTP_BUCKETS,
  },
  {
    name: 'anneal_queue_depth',
    type: 'gauge',
    unit: 'none',
    scope: 'control-plane',
    labels: ['pool', 'state'],
    labelValues: { state: QUEUE_STATES },
    help: 'Runs in the pool’s BullMQ queue by job state (KEDA scales workers on waiting + prioritized + active).',
    emittedBy: ['control-plane'],
  },
  {
    name: 'anneal_queue_oldest_waiting_age_seconds',
    type: 'gauge',
    unit: 'seconds',
    scope: 'control-plane',
    labels: ['pool'],
    help: 'Age of the oldest run waiting in the pool’s queue; 0 when none waits.',
    emittedBy: ['control-plane'],
  },
  {
    name: 'anneal_queue_wait_duration_seconds',
    type: 'histogram',
    unit: 'seconds',
    scope: 'control-plane',
    labels: ['pool'],
    help: 'Time runs spent queued before a worker started them.',
    emittedBy: ['control-plane'],
    buckets: QUEUE_WAIT_BUCKETS,
  },
  {
    name: 'anneal_pool_workers',
    type: 'gauge',
    unit: 'none',
    scope: 'control-plane',
    labels: ['pool', 'state'],
    labelValues: { state: WORKER_STATES },
    help: 'Registered workers with a live heartbeat (online), and those of them busy or draining.',
    emittedBy: ['control-plane'],
  },
  {
    name: 'anneal_pool_worker_heartbeat_age_seconds',
    type: 'gauge',
    unit: 'seconds',
    scope: 'control-plane',
    labels: ['pool', 'worker'],
    help: 'Seconds since each known worker’s last heartbeat, read from the registry at scrape time; kept for crashed workers (until a clean shutdown or 24h), so a lost worker is visible after its own series are gone.',
    emittedBy: ['control-plane'],
  },
  {
    name: 'anneal_runs',
    type: 'gauge',
    unit: 'none',
    scope: 'control-plane',
    labels: ['state', 'kind'],
    labelValues: { state: RUN_STATES },
    help: 'Runs by lifecycle state and kind.',
    emittedBy: ['control-plane'],
  },
  {
    name: 'anneal_runs_transitions_total',
    type: 'counter',
    unit: 'none',
    scope: 'control-plane',
    labels: ['state', 'kind'],
    labelValues: { state: RUN_STATES },
    help: 'Run state transitions, by the state entered.',
    emittedBy: ['control-plane'],
  },
  // ── both apps ─────────────────────────────────────────────────────────────────────────
  {
    name: 'anneal_build_info',
    type: 'gauge',
    unit: 'none',
    scope: 'process',
    labels: ['app', 'version'],
    help: 'Always 1; the running Anneal application and version.',
    emittedBy: ['control-plane', 'worker'],
  },
] as const satisfies readonly MetricDefinition[];

/** The per-run series of the step-metric rows that have one, in table order. */
export function stepSeriesDefinitions(table: StepMetricTable): MetricDefinition[] {
  return Object.values(table).flatMap((row) => {
    const series = row.series;
    if (!series) return [];
    const def: MetricDefinition = {
      name: series.name,
      type: series.type,
      unit: row.unit,
      scope: 'run',
      labels: row.label === undefined ? ['run_id'] : ['run_id', row.label as LabelName],
      help: row.help,
      emittedBy: ['worker'],
      recordKey: keyPattern(row),
    };
    if (typeof row.key !== 'string' && row.label !== undefined) {
      def.labelValues = { [row.label]: Object.keys(row.key) };
    }
    if (series.buckets) def.buckets = series.buckets;
    return [def];
  });
}

/** The whole catalogue for a step-metric table (tests pass their own table). */
export function buildCatalogue(steps: StepMetricTable = STEP_METRICS): MetricDefinition[] {
  return [
    ...RUN_METRICS,
    ...stepSeriesDefinitions(steps),
    ...evalCellDefinitions(),
    ...PROCESS_METRICS,
  ];
}

export const METRICS: readonly MetricDefinition[] = buildCatalogue();

type StepSeriesName = {
  [Id in keyof typeof STEP_METRICS]: (typeof STEP_METRICS)[Id] extends {
    series: { name: infer N };
  }
    ? N
    : never;
}[keyof typeof STEP_METRICS];

export type MetricName =
  | (typeof RUN_METRICS)[number]['name']
  | StepSeriesName
  | EvalCellSeriesName
  | (typeof PROCESS_METRICS)[number]['name'];

const BY_NAME: ReadonlyMap<string, MetricDefinition> = new Map(METRICS.map((m) => [m.name, m]));

export function getMetricDefinition(name: string): MetricDefinition | undefined {
  return BY_NAME.get(name);
}

/** Names of the series a metric exposes (histograms add _bucket, _sum and _count). */
export function exposedSeriesNames(metric: MetricDefinition): string[] {
  if (metric.type !== 'histogram') return [metric.name];
  return [`${metric.name}_bucket`, `${metric.name}_sum`, `${metric.name}_count`];
}

/** Every series name the catalogue exposes, for cross-checks of dashboards, rules and KEDA. */
export function allExposedSeriesNames(metrics: readonly MetricDefinition[] = METRICS): Set<string> {
  return new Set(metrics.flatMap((m) => exposedSeriesNames(m)));
}
