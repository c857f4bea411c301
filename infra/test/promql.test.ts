import { describe, expect, it } from 'vitest';
import { expandGrafanaVariables, labelValuesMetric, seriesNamesIn } from '../src/promql.ts';

describe('seriesNamesIn', () => {
  it.each([
    ['anneal_run_step', ['anneal_run_step']],
    ['max(anneal_run_loss{run_id="$run_id"})', ['anneal_run_loss']],
    [
      'histogram_quantile(0.99, sum by (route, le) (rate(anneal_http_request_duration_seconds_bucket[5m])))',
      ['anneal_http_request_duration_seconds_bucket'],
    ],
    [
      'time() - max by (pool, worker) (anneal_worker_heartbeat_timestamp_seconds{pool=~"gpu|cpu"}) > 60 or up{job="anneal-worker"} == 0',
      ['anneal_worker_heartbeat_timestamp_seconds', 'up'],
    ],
    [
      'a_metric / on (run_id) group_left (kind) anneal_run_info unless b offset 15m',
      ['a_metric', 'anneal_run_info', 'b'],
    ],
    [
      'sum(rate(vllm:prompt_tokens_total{model_name=~"$model_name"}[$__rate_interval]))',
      ['vllm:prompt_tokens_total'],
    ],
    [
      'run_id:anneal_run_grad_norm:zscore1h > 4e-1 and 1.5 < bool x',
      ['run_id:anneal_run_grad_norm:zscore1h', 'x'],
    ],
    ['max_over_time(anneal_run_step[10m:1m]) - 0x1f', ['anneal_run_step']],
    ['label_replace(m, "dst", "$1", "src", "(.*)")', ['m']],
  ])('%s', (expr, names) => {
    expect(seriesNamesIn(expr)).toEqual(names);
  });
});

describe('expandGrafanaVariables', () => {
  it('substitutes user variables and Grafana intervals in every syntax', () => {
    const expr = 'rate(x{run_id="$run_id",pool=~"${pool}",m="[[model]]"}[$__rate_interval])';
    expect(expandGrafanaVariables(expr, { run_id: 'r1', pool: '.*', model: 'q' })).toBe(
      'rate(x{run_id="r1",pool=~".*",m="q"}[1m])',
    );
  });

  it('names a variable it has no value for', () => {
    expect(() => expandGrafanaVariables('x{a="$missing"}')).toThrow(/\$missing/);
  });
});

describe('labelValuesMetric', () => {
  it('reads the metric of a label_values query', () => {
    expect(labelValuesMetric('label_values(anneal_run_step, run_id)')).toBe('anneal_run_step');
    expect(labelValuesMetric('label_values(vllm:num_requests_running{a="b"}, model_name)')).toBe(
      'vllm:num_requests_running',
    );
  });

  it('rejects other query forms', () => {
    expect(() => labelValuesMetric('query_result(up)')).toThrow(/label_values/);
  });
});

describe('unknownSeriesReason', () => {
  it('accepts catalogue metrics (with histogram series), recording rules, vLLM metrics and up', async () => {
    const { unknownSeriesReason } = await import('../src/known-series.ts');
    for (const ok of [
      'anneal_run_step',
      'anneal_http_request_duration_seconds_bucket',
      'run_id:anneal_run_grad_norm:zscore1h',
      'vllm:e2e_request_latency_seconds_count',
      'up',
    ]) {
      expect(unknownSeriesReason(ok), ok).toBeUndefined();
    }
    expect(unknownSeriesReason('anneal_run_made_up')).toMatch(/not in the metric catalogue/);
    expect(unknownSeriesReason('vllm:made_up')).toMatch(/docs\/engines\.md/);
    expect(unknownSeriesReason('pool:anneal_made_up:sum')).toMatch(/recording rule/);
    expect(unknownSeriesReason('node_cpu_seconds_total')).toMatch(/neither/);
  });
});

describe('assertPromtool', () => {
  it('fails with install instructions when promtool is missing', async () => {
    const { assertPromtool } = await import('../src/promtool.ts');
    const saved = process.env['PROMTOOL_BIN'];
    process.env['PROMTOOL_BIN'] = '/nonexistent/promtool';
    try {
      expect(() => assertPromtool()).toThrow(/apt-get install prometheus/);
    } finally {
      if (saved === undefined) delete process.env['PROMTOOL_BIN'];
      else process.env['PROMTOOL_BIN'] = saved;
    }
  });
});
