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
      loss: 0.1,
      gradNorm: 1,
      trainInferenceKl: { k1: 0.001, k3: 0.002 },
      importanceRatio: { mean: 1, min: 0.5, max: 1.5, outOfRangeFraction: 0.01 },
      reward: { all: 0.4, qa: 0.5, rubric: 0.3 },
      baseReward: { all: 0.6, qa: 0.7, rubric: 0.5 },
      preferenceScore: 0.5,
      toolPenalty: 0.1,
      lengthPenalty: 0.1,
      toolCallsPerRollout: 2,
      responseTokens: 100,
      zeroVarianceGroups: 1,
      phaseSeconds: { rollout: 1, reward: 1, train: 1, weight_sync: 1, checkpoint: 1 },
      rolloutTokens: 100,
      trainedTokens: 100,
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
