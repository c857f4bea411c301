// Pools & workers dashboard: queues, wait times, workers, slots, worker-side errors.
import { dashboard, variable, type GrafanaDashboard } from '../panels.ts';

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
    ],
  });
}
