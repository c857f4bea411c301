import { describe, expect, it } from 'vitest';
import { METRICS, type MetricDefinition } from './catalogue.ts';
import { FORBIDDEN_LABELS, LABELS } from './labels.ts';
import { lintCatalogue } from './naming.ts';

const good: MetricDefinition = {
  name: 'anneal_example_duration_seconds',
  type: 'histogram',
  unit: 'seconds',
  scope: 'control-plane',
  labels: ['pool'],
  help: 'An example.',
  emittedBy: ['control-plane'],
  buckets: [0.1, 1],
};

function rulesBroken(overrides: Record<string, unknown>): string[] {
  return lintCatalogue([{ ...good, ...overrides } as unknown as MetricDefinition]).map(
    (v) => v.rule,
  );
}

describe('the catalogue', () => {
  it('follows every naming and label rule', () => {
    expect(lintCatalogue(METRICS)).toEqual([]);
  });

  it('names every metric anneal_*, with _total exactly on counters', () => {
    for (const m of METRICS) {
      expect(m.name).toMatch(/^anneal_[a-z0-9_]+$/);
      expect(m.name.endsWith('_total')).toBe(m.type === 'counter');
    }
  });

  it('uses only declared labels, never forbidden ones, and run_id only on per-run series', () => {
    const forbidden: readonly string[] = FORBIDDEN_LABELS;
    for (const m of METRICS) {
      for (const label of m.labels) {
        expect(Object.keys(LABELS)).toContain(label);
        expect(forbidden).not.toContain(label);
      }
      expect((m.labels as readonly string[]).includes('run_id')).toBe(m.scope === 'run');
    }
  });

  it('covers what docs/recipe.md §7 says to watch and what a worker operator needs', () => {
    const names = new Set<string>(METRICS.map((m) => m.name));
    for (const needed of [
      'anneal_run_train_inference_kl',
      'anneal_run_importance_ratio',
      'anneal_run_importance_ratio_out_of_range_ratio',
      'anneal_run_grad_norm',
      'anneal_run_loss',
      'anneal_run_reward',
      'anneal_run_base_reward',
      'anneal_run_preference_score',
      'anneal_run_tool_penalty',
      'anneal_run_length_penalty',
      'anneal_run_tool_calls_per_rollout',
      'anneal_run_response_length_tokens',
      'anneal_run_zero_variance_groups',
      'anneal_run_step_phase_duration_seconds',
      'anneal_run_rollout_tokens_total',
      'anneal_run_step',
      'anneal_worker_errors_total',
      'anneal_worker_retries_total',
      'anneal_worker_inflight_requests',
      'anneal_worker_slots_busy',
      'anneal_worker_heartbeat_timestamp_seconds',
      'anneal_http_requests_total',
      'anneal_http_request_duration_seconds',
      'anneal_queue_depth',
      'anneal_queue_oldest_waiting_age_seconds',
      'anneal_pool_workers',
      'anneal_runs',
    ]) {
      expect(names, needed).toContain(needed);
    }
  });
});

describe('lintCatalogue', () => {
  it('accepts a well-formed metric', () => {
    expect(lintCatalogue([good])).toEqual([]);
  });

  it.each([
    ['name-format', { name: 'example_duration_seconds' }],
    ['name-format', { name: 'anneal_Example_seconds' }],
    ['name-format', { name: 'anneal__double_seconds' }],
    ['total-suffix', { name: 'anneal_example_seconds_total' }],
    ['total-suffix', { type: 'counter', name: 'anneal_example_seconds', buckets: undefined }],
    ['unit-suffix', { name: 'anneal_example_duration' }],
    ['unit-suffix', { unit: 'none', name: 'anneal_example_seconds' }],
    ['unit-suffix', { unit: 'bytes' }],
    ['base-units', { name: 'anneal_example_duration_ms', unit: 'none' }],
    ['base-units', { name: 'anneal_cache_usage_percent', unit: 'none' }],
    ['type', { type: 'summary' }],
    ['buckets', { buckets: [] }],
    ['buckets', { buckets: [1, 1] }],
    ['buckets', { type: 'gauge' }],
    ['forbidden-label', { labels: ['prompt_id'] }],
    ['forbidden-label', { labels: ['user_id'] }],
    ['reserved-label', { labels: ['le'] }],
    ['label-undeclared', { labels: ['colour'] }],
    ['labels-unique', { labels: ['pool', 'pool'] }],
    ['run-scope', { labels: ['run_id'] }],
    [
      'run-scope',
      { scope: 'run', name: 'anneal_run_example_seconds', labels: ['pool'], emittedBy: ['worker'] },
    ],
    ['run-scope', { scope: 'run', labels: ['run_id'], emittedBy: ['worker'] }],
    ['worker-scope', { scope: 'worker', labels: ['worker', 'pool'] }],
    ['help', { help: '' }],
    ['emitted-by', { emittedBy: [] }],
    ['label-values', { labelValues: { state: ['a'] } }],
  ])('reports %s for %j', (rule, overrides) => {
    expect(rulesBroken(overrides)).toContain(rule);
  });

  it('reports a histogram whose _count collides with another metric', () => {
    const clash: MetricDefinition = {
      ...good,
      type: 'gauge',
      name: 'anneal_example_duration_seconds_count',
      unit: 'none',
      buckets: undefined,
    };
    const rules = lintCatalogue([good, clash]).map((v) => v.rule);
    expect(rules).toContain('unique');
  });
});
