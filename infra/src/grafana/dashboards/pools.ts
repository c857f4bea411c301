// Pools & workers dashboard: queues, wait times, workers, slots, worker-side errors, and the
// Usage row (what each tenant consumes and spends) and the Fleet row (each run's share of the
// inference endpoints it shares, docs/operations.md "Fair share of an endpoint").
import { dashboard, variable, type GrafanaDashboard, type PanelSpec } from '../panels.ts';

const POOL = 'pool=~"$pool"';

export function poolsDashboard(): GrafanaDashboard {
  return dashboard({
    uid: 'anneal-pools',
    title: 'Anneal / Pools & workers',
    description:
      'Queue depth and wait per pool, worker states, run slots, worker errors and retries.',
    variables: [variable('pool', 'Pool', 'anneal_queue_depth', { multi: true })],
    panels: [
      {
        title: 'Queue depth by state',
        stacked: true,
        queries: [
          { expr: `pool_state:anneal_queue_depth:max{${POOL}}`, legend: '{{pool}} {{state}}' },
        ],
      },
      {
        title: 'Wait time',
        description:
          'Age of the oldest waiting run, and p95 of the time runs waited before starting.',
        unit: 's',
        queries: [
          {
            expr: `max by (pool) (anneal_queue_oldest_waiting_age_seconds{${POOL}})`,
            legend: '{{pool}} oldest waiting',
          },
          {
            expr: `pool:anneal_queue_wait_duration_seconds:p95_15m{${POOL}}`,
            legend: '{{pool}} p95 wait (15m)',
          },
        ],
      },
      {
        title: 'Workers online / busy / draining',
        queries: [
          { expr: `pool_state:anneal_pool_workers:max{${POOL}}`, legend: '{{pool}} {{state}}' },
        ],
      },
      {
        title: 'Run slots',
        queries: [
          { expr: `pool:anneal_worker_slots_busy:sum{${POOL}}`, legend: '{{pool}} busy' },
          { expr: `pool:anneal_worker_slots:sum{${POOL}}`, legend: '{{pool}} total' },
        ],
      },
      {
        title: 'Worker errors by subsystem',
        unit: 'ops',
        queries: [
          {
            expr: `pool_subsystem:anneal_worker_errors:rate5m{${POOL}}`,
            legend: '{{pool}} {{subsystem}}',
          },
        ],
      },
      {
        title: 'Worker retries by subsystem',
        unit: 'ops',
        queries: [
          {
            expr: `pool_subsystem:anneal_worker_retries:rate5m{${POOL}}`,
            legend: '{{pool}} {{subsystem}}',
          },
        ],
      },
      {
        title: 'In-flight engine requests',
        queries: [
          {
            expr: `sum by (pool, engine) (anneal_worker_inflight_requests{${POOL}})`,
            legend: '{{pool}} {{engine}}',
          },
        ],
      },
      {
        title: 'Engine request latency p95',
        unit: 's',
        queries: [
          {
            expr: `histogram_quantile(0.95, sum by (engine, le) (rate(anneal_worker_engine_request_duration_seconds_bucket{${POOL}}[$__rate_interval])))`,
            legend: '{{engine}}',
          },
        ],
      },
      {
        title: 'Heartbeat age by worker',
        unit: 's',
        queries: [
          {
            expr: `time() - max by (pool, worker) (anneal_worker_heartbeat_timestamp_seconds{${POOL}})`,
            legend: '{{worker}}',
          },
        ],
      },
      {
        title: 'Runs by state',
        queries: [
          { expr: 'sum by (state) (max by (state, kind) (anneal_runs))', legend: '{{state}}' },
        ],
      },
      ...USAGE_ROW,
      ...FLEET_ROW,
    ],
  });
}

/** What tenants consume and spend (docs/usage.md), summed over every worker: the counters are
 * added once per committed step, so a resumed step is not counted twice. */
const USAGE_ROW: readonly PanelSpec[] = [
  { kind: 'row', title: 'Usage', queries: [] },
  {
    title: 'Spend rate by tenant',
    description: 'USD per hour at the operator price table.',
    unit: 'currencyUSD',
    queries: [
      {
        expr: 'sum by (tenant) (rate(anneal_tenant_cost_usd_total[$__rate_interval])) * 3600',
        legend: '{{tenant}} $/h',
      },
    ],
  },
  {
    title: 'Spend in the time range by tenant',
    kind: 'stat',
    unit: 'currencyUSD',
    queries: [
      {
        expr: 'sum by (tenant) (increase(anneal_tenant_cost_usd_total[$__range]))',
        legend: '{{tenant}}',
      },
    ],
  },
  {
    title: 'Spend rate by item',
    description: 'USD per hour by price-table item, all tenants.',
    unit: 'currencyUSD',
    stacked: true,
    queries: [
      {
        expr: 'sum by (item) (rate(anneal_tenant_cost_usd_total[$__rate_interval])) * 3600',
        legend: '{{item}}',
      },
    ],
  },
  {
    title: 'Tokens/s by tenant',
    description: 'Prompt and completion tokens sampled, tokens trained.',
    queries: [
      {
        expr: 'sum by (tenant, token_type) (rate(anneal_tenant_tokens_total[$__rate_interval]))',
        legend: '{{tenant}} {{token_type}}',
      },
    ],
  },
  {
    title: 'Search calls/s by tenant',
    description: 'Tool calls that reached the search backend.',
    unit: 'ops',
    queries: [
      {
        expr: 'sum by (tenant) (rate(anneal_tenant_tool_calls_total[$__rate_interval]))',
        legend: '{{tenant}}',
      },
    ],
  },
  {
    title: 'Worker slots held by tenant',
    description: 'Slot seconds per second: the mean number of slots the tenant’s runs held.',
    queries: [
      {
        expr: 'sum by (tenant) (rate(anneal_tenant_slot_seconds_total[$__rate_interval]))',
        legend: '{{tenant}}',
      },
    ],
  },
];

const fleetShare = (counter: string) =>
  `sum by (endpoint, run_id) (rate(${counter}[$__rate_interval]))` +
  ` / on (endpoint) group_left sum by (endpoint) (rate(${counter}[$__rate_interval]))`;

/** Each run's share of the endpoints whose capacity runs share by weight (vLLM endpoints that
 * declare maxNumSeqs), summed over every worker process. */
const FLEET_ROW: readonly PanelSpec[] = [
  { kind: 'row', title: 'Fleet (fair share of inference endpoints)', queries: [] },
  {
    title: 'Token share by run',
    description:
      "Each run's share of the tokens generated on the endpoint; under saturation it follows the runs' weights.",
    unit: 'percentunit',
    stacked: true,
    queries: [
      { expr: fleetShare('anneal_run_fleet_tokens_total'), legend: '{{endpoint}} {{run_id}}' },
    ],
  },
  {
    title: 'Request share by run',
    unit: 'percentunit',
    stacked: true,
    queries: [
      { expr: fleetShare('anneal_run_fleet_requests_total'), legend: '{{endpoint}} {{run_id}}' },
    ],
  },
  {
    title: 'Wait for the share, p95 by run',
    description: 'Time a rollout request waited for its run’s share before it was sent.',
    unit: 's',
    queries: [
      {
        expr:
          'histogram_quantile(0.95, sum by (endpoint, run_id, le) ' +
          '(rate(anneal_run_fleet_wait_seconds_bucket[$__rate_interval])))',
        legend: '{{endpoint}} {{run_id}}',
      },
    ],
  },
  {
    title: 'Tokens/s by run',
    queries: [
      {
        expr: 'sum by (endpoint, run_id) (rate(anneal_run_fleet_tokens_total[$__rate_interval]))',
        legend: '{{endpoint}} {{run_id}}',
      },
    ],
  },
];
