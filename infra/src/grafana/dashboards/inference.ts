// Inference dashboard: vLLM's own Prometheus series (docs/engines.md "Its Prometheus metrics").
import { dashboard, variable, type GrafanaDashboard } from '../panels.ts';

const MODEL = 'model_name=~"$model_name"';
const quantile = (q: number, histogram: string) =>
  `histogram_quantile(${q}, sum by (le) (rate(${histogram}_bucket{${MODEL}}[$__rate_interval])))`;

export function inferenceDashboard(): GrafanaDashboard {
  return dashboard({
    uid: 'anneal-inference',
    title: 'Anneal / Inference (vLLM)',
    description: 'vLLM servers behind the named inference endpoints: load, cache, latency, tokens.',
    variables: [variable('model_name', 'Model', 'vllm:num_requests_running', { multi: true })],
    panels: [
      {
        title: 'Requests running / waiting',
        queries: [
          {
            expr: `sum by (model_name) (vllm:num_requests_running{${MODEL}})`,
            legend: '{{model_name}} running',
          },
          {
            expr: `sum by (model_name) (vllm:num_requests_waiting{${MODEL}})`,
            legend: '{{model_name}} waiting',
          },
        ],
      },
      {
        title: 'KV cache usage',
        unit: 'percentunit',
        min: 0,
        queries: [
          {
            expr: `max by (instance) (vllm:kv_cache_usage_perc{${MODEL}})`,
            legend: '{{instance}}',
          },
        ],
      },
      {
        title: 'Token throughput',
        unit: 'short',
        queries: [
          {
            expr: `sum(rate(vllm:prompt_tokens_total{${MODEL}}[$__rate_interval]))`,
            legend: 'prompt tokens/s',
          },
          {
            expr: `sum(rate(vllm:generation_tokens_total{${MODEL}}[$__rate_interval]))`,
            legend: 'generation tokens/s',
          },
        ],
      },
      {
        title: 'Finished requests by reason',
        unit: 'reqps',
        queries: [
          {
            expr: `sum by (finished_reason) (rate(vllm:request_success_total{${MODEL}}[$__rate_interval]))`,
            legend: '{{finished_reason}}',
          },
        ],
      },
      {
        title: 'Time to first token',
        unit: 's',
        queries: [
          { expr: quantile(0.5, 'vllm:time_to_first_token_seconds'), legend: 'p50' },
          { expr: quantile(0.99, 'vllm:time_to_first_token_seconds'), legend: 'p99' },
        ],
      },
      {
        title: 'End-to-end request latency',
        unit: 's',
        queries: [
          { expr: quantile(0.5, 'vllm:e2e_request_latency_seconds'), legend: 'p50' },
          { expr: quantile(0.99, 'vllm:e2e_request_latency_seconds'), legend: 'p99' },
        ],
      },
      {
        title: 'Inter-token latency',
        unit: 's',
        queries: [
          { expr: quantile(0.5, 'vllm:inter_token_latency_seconds'), legend: 'p50' },
          { expr: quantile(0.99, 'vllm:inter_token_latency_seconds'), legend: 'p99' },
        ],
      },
      {
        title: 'Queue time',
        unit: 's',
        queries: [{ expr: quantile(0.99, 'vllm:request_queue_time_seconds'), legend: 'p99' }],
      },
      {
        title: 'Prefix cache hit rate',
        unit: 'percentunit',
        min: 0,
        queries: [
          {
            expr: `sum(rate(vllm:prefix_cache_hits_total{${MODEL}}[$__rate_interval])) / sum(rate(vllm:prefix_cache_queries_total{${MODEL}}[$__rate_interval]))`,
            legend: 'hit rate',
          },
        ],
      },
      {
        title: 'Preemptions',
        unit: 'ops',
        queries: [
          {
            expr: `sum(rate(vllm:num_preemptions_total{${MODEL}}[$__rate_interval]))`,
            legend: 'preemptions/s',
          },
        ],
      },
    ],
  });
}
