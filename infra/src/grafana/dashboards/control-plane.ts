// Control-plane dashboard: API traffic, latency and errors by route; run lifecycle.
import { dashboard, type GrafanaDashboard } from '../panels.ts';

const latency = (q: number) =>
  `histogram_quantile(${q}, sum by (route, le) (route_le:anneal_http_request_duration_seconds_bucket:rate5m))`;

export function controlPlaneDashboard(): GrafanaDashboard {
  return dashboard({
    uid: 'anneal-control-plane',
    title: 'Anneal / Control plane',
    description: 'REST API request rate, latency and errors by route; runs by state.',
    panels: [
      {
        title: 'Control-plane replicas up',
        kind: 'stat',
        width: 6,
        height: 4,
        queries: [{ expr: 'sum(up{job="anneal-control-plane"})' }],
      },
      {
        title: 'Requests/s',
        kind: 'stat',
        unit: 'reqps',
        width: 6,
        height: 4,
        queries: [{ expr: 'sum(route_status_code:anneal_http_requests:rate5m)' }],
      },
      {
        title: 'Runs running',
        kind: 'stat',
        width: 6,
        height: 4,
        queries: [{ expr: 'sum(max by (kind) (anneal_runs{state="running"}))' }],
      },
      {
        // Paused runs wait for a resume, not for a worker: shown apart from the queue.
        title: 'Runs queued / paused',
        kind: 'stat',
        width: 6,
        height: 4,
        queries: [
          {
            expr: 'sum(max by (kind) (anneal_runs{state=~"queued|retrying"}))',
            legend: 'queued',
          },
          { expr: 'sum(max by (kind) (anneal_runs{state="paused"}))', legend: 'paused' },
        ],
      },
      {
        title: 'Request rate by route',
        unit: 'reqps',
        queries: [
          {
            expr: 'sum by (route) (route_status_code:anneal_http_requests:rate5m)',
            legend: '{{route}}',
          },
        ],
      },
      {
        title: 'Errors by route and status',
        unit: 'reqps',
        queries: [
          {
            expr: 'sum by (route, status_code) (route_status_code:anneal_http_requests:rate5m{status_code=~"4..|5.."})',
            legend: '{{route}} {{status_code}}',
          },
        ],
      },
      {
        title: 'Latency p50 by route',
        unit: 's',
        queries: [{ expr: latency(0.5), legend: '{{route}}' }],
      },
      {
        title: 'Latency p99 by route',
        unit: 's',
        queries: [{ expr: latency(0.99), legend: '{{route}}' }],
      },
      {
        title: '5xx ratio by route',
        unit: 'percentunit',
        queries: [{ expr: 'route:anneal_http_request_errors:ratio_rate5m', legend: '{{route}}' }],
      },
      {
        title: 'Run state transitions',
        unit: 'ops',
        queries: [
          {
            expr: 'sum by (state) (rate(anneal_runs_transitions_total[$__rate_interval]))',
            legend: '{{state}}',
          },
        ],
      },
    ],
  });
}
