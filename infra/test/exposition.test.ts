// The metrics the apps actually expose pass Prometheus' own linter (promtool check metrics).
import { spawnSync } from 'node:child_process';
import { createMetrics, Registry } from '@anneal/telemetry';
import { beforeAll, describe, expect, it } from 'vitest';
import { assertPromtool, promtoolPath } from '../src/promtool.ts';

beforeAll(() => {
  assertPromtool();
});

function lint(exposition: string): string {
  const run = spawnSync(promtoolPath(), ['check', 'metrics'], {
    input: exposition,
    encoding: 'utf8',
  });
  return `${run.stdout}${run.stderr}`.trim();
}

describe('promtool check metrics', () => {
  it('finds nothing to complain about in a worker’s /metrics after a step', async () => {
    const sink = createMetrics(new Registry(), {
      app: 'worker',
      version: '0.1.0',
      worker: { pool: 'gpu', id: 'w-1' },
      runSeriesGraceMs: 0,
      defaultMetrics: false,
    });
    sink.emit('run:started', { runId: 'run_1', kind: 'grpo', pool: 'gpu', atMs: 1000 });
    sink.emit('step:committed', {
      runId: 'run_1',
      step: 1,
      atMs: 2000,
      metrics: {
        loss: 0.1,
        grad_norm: 1,
        'train_inference_kl/k1': 0.001,
        train_inference_kl: 0.002,
        'is_ratio/mean': 1,
        'is_ratio/min': 0.5,
        'is_ratio/max': 1.5,
        'is_ratio/out_of_range_fraction': 0.01,
        'reward/all': 0.4,
        'reward/qa': 0.5,
        'reward/rubric': 0.3,
        'base_reward/all': 0.6,
        'base_reward/qa': 0.7,
        'base_reward/rubric': 0.5,
        preference_score: 0.5,
        tool_penalty: 0.1,
        length_penalty: 0.1,
        tool_calls_per_rollout: 2,
        response_tokens: 100,
        zero_variance_groups: 1,
        'phase_seconds/rollout': 1,
        'phase_seconds/reward': 1,
        'phase_seconds/train': 1,
        'phase_seconds/weight_sync': 1,
        'phase_seconds/checkpoint': 1,
        rollout_tokens: 100,
        trained_tokens: 100,
      },
    });
    sink.emit('worker:heartbeat', { atMs: 3000 });
    sink.emit('worker:slots', { busy: 1, total: 1 });
    sink.emit('request:started', { engine: 'inference' });
    sink.emit('request:finished', { engine: 'inference', outcome: 'ok', durationSeconds: 0.1 });
    sink.emit('attempt:failed', { subsystem: 'trainer', willRetry: true });
    const text = await sink.registry.metrics();
    expect(text).toContain('anneal_run_train_inference_kl{run_id="run_1",estimator="k3"} 0.002');
    expect(lint(text)).toBe('');
    sink.close();
  });

  it('finds nothing to complain about in the control plane’s /metrics', async () => {
    const sink = createMetrics(new Registry(), {
      app: 'control-plane',
      version: '0.1.0',
      defaultMetrics: false,
    });
    sink.emit('http:responded', {
      route: '/v1/runs',
      method: 'POST',
      statusCode: 201,
      durationSeconds: 0.01,
    });
    sink.emit('pool:observed', {
      pool: 'gpu',
      queue: { waiting: 1, prioritized: 0, delayed: 0, active: 1, paused: 0 },
      oldestWaitingAgeSeconds: 3,
      workers: { online: 1, busy: 1, draining: 0 },
    });
    sink.emit('runs:observed', { counts: [{ state: 'running', kind: 'grpo', count: 1 }] });
    sink.emit('run:transitioned', {
      runId: 'run_1',
      kind: 'grpo',
      pool: 'gpu',
      state: 'running',
      queuedSeconds: 3,
    });
    const text = await sink.registry.metrics();
    expect(text).toContain('anneal_queue_depth{pool="gpu",state="waiting"} 1');
    expect(lint(text)).toBe('');
  });

  it('does complain about a badly named metric (the linter is live)', () => {
    const bad =
      '# HELP anneal_bad_milliseconds x\n# TYPE anneal_bad_milliseconds counter\nanneal_bad_milliseconds 1\n';
    expect(lint(bad)).not.toBe('');
  });
});
