// Which series names dashboards, rules and KEDA may select: the anneal_* catalogue, our own
// recording rules, vLLM's documented metrics, and Prometheus' synthetic `up`.
import { allExposedSeriesNames } from '@anneal/telemetry';
import { ruleExpressions } from './expressions.ts';

/** vLLM's Prometheus metrics as listed in docs docs/engines.md ("Its Prometheus metrics"). */
export const VLLM_METRICS = {
  gauges: ['vllm:num_requests_running', 'vllm:num_requests_waiting', 'vllm:kv_cache_usage_perc'],
  counters: [
    'vllm:prompt_tokens_total',
    'vllm:generation_tokens_total',
    'vllm:request_success_total',
    'vllm:num_preemptions_total',
    'vllm:prefix_cache_queries_total',
    'vllm:prefix_cache_hits_total',
  ],
  histograms: [
    'vllm:time_to_first_token_seconds',
    'vllm:e2e_request_latency_seconds',
    'vllm:inter_token_latency_seconds',
    'vllm:request_queue_time_seconds',
  ],
} as const;

export function vllmSeriesNames(): Set<string> {
  return new Set([
    ...VLLM_METRICS.gauges,
    ...VLLM_METRICS.counters,
    ...VLLM_METRICS.histograms.flatMap((h) => [`${h}_bucket`, `${h}_sum`, `${h}_count`]),
  ]);
}

export const SYNTHETIC_SERIES = ['up'] as const;

export function recordedSeriesNames(): Set<string> {
  return new Set(ruleExpressions().flatMap((r) => (r.record ? [r.record] : [])));
}

let known: { catalogue: Set<string>; recorded: Set<string>; vllm: Set<string> } | undefined;

/** Why `name` may not be selected, or undefined when it is a known series. */
export function unknownSeriesReason(name: string): string | undefined {
  known ??= {
    catalogue: allExposedSeriesNames(),
    recorded: recordedSeriesNames(),
    vllm: vllmSeriesNames(),
  };
  if (known.catalogue.has(name) || known.recorded.has(name) || known.vllm.has(name)) {
    return undefined;
  }
  if ((SYNTHETIC_SERIES as readonly string[]).includes(name)) return undefined;
  if (name.startsWith('anneal_'))
    return `${name} is not in the metric catalogue (packages/telemetry)`;
  if (name.includes(':') && !name.startsWith('vllm:'))
    return `${name} is not a recording rule in infra/prometheus/rules`;
  if (name.startsWith('vllm:')) return `${name} is not a vLLM metric listed in docs/engines.md`;
  return `${name} is neither an anneal_* catalogue metric, a recording rule, nor vllm:*`;
}
