import { Registry } from 'prom-client';
import { RUN_KINDS, RUN_STATES } from '@anneal/protocol';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { samples, valueOf } from '../test/prom.ts';
import type { StepCommitted } from './events.ts';
import { createMetrics, type MetricsSink } from './metrics.ts';
import { SUBSYSTEMS } from './labels.ts';
import { STEP_METRICS, type StepMetricTable } from './step-metrics.ts';

const worker = { pool: 'gpu', id: 'w-1' };
const sinks: MetricsSink[] = [];

function workerSink(graceMs = 0): MetricsSink {
  const sink = createMetrics(new Registry(), {
    app: 'worker',
    version: '1.2.3',
    worker,
    runSeriesGraceMs: graceMs,
    defaultMetrics: false,
  });
  sinks.push(sink);
  return sink;
}

/** A GRPO step record keyed as executors commit it (literal keys: the table must map them). */
function step(runId: string, n: number, extra: Record<string, number | null> = {}): StepCommitted {
  return {
    runId,
    step: n,
    atMs: 1_700_000_000_000 + n * 1000,
    metrics: {
      loss: 0.25,
      grad_norm: 1.5,
      'train_inference_kl/k1': 0.0004,
      train_inference_kl: 0.0009,
      'is_ratio/mean': 1.01,
      'is_ratio/min': 0.4,
      'is_ratio/max': 2.5,
      'is_ratio/out_of_range_fraction': 0.03,
      'reward/all': 0.5,
      'reward/qa': 0.6,
      'reward/rubric': 0.4,
      'base_reward/all': 0.7,
      'base_reward/qa': 0.8,
      'base_reward/rubric': null,
      preference_score: 0.55,
      tool_penalty: 0.1,
      length_penalty: 0.05,
      tool_calls_per_rollout: 2.25,
      response_tokens: 310,
      zero_variance_groups: 3,
      'phase_seconds/rollout': 12,
      'phase_seconds/reward': 1,
      'phase_seconds/train': 4,
      'phase_seconds/weight_sync': 0.5,
      rollout_tokens: 1000,
      trained_tokens: 800,
      grpo_objective: 0.1,
      'tool_baseline/g0': 1,
      custom_metric: 7,
      ...extra,
    },
  };
}

afterEach(() => {
  for (const sink of sinks.splice(0)) sink.close();
  vi.useRealTimers();
});

describe('step:committed', () => {
  it('sets every per-run gauge from the step record', async () => {
    const sink = workerSink();
    sink.emit('step:committed', step('r1', 7));
    const r = sink.registry;
    const run = { run_id: 'r1' };
    expect(await valueOf(r, 'anneal_run_step', run)).toBe(7);
    expect(await valueOf(r, 'anneal_run_last_step_timestamp_seconds', run)).toBe(1_700_000_007);
    expect(await valueOf(r, 'anneal_run_loss', run)).toBe(0.25);
    expect(await valueOf(r, 'anneal_run_grad_norm', run)).toBe(1.5);
    expect(await valueOf(r, 'anneal_run_train_inference_kl', { ...run, estimator: 'k1' })).toBe(
      0.0004,
    );
    expect(await valueOf(r, 'anneal_run_train_inference_kl', { ...run, estimator: 'k3' })).toBe(
      0.0009,
    );
    expect(await valueOf(r, 'anneal_run_importance_ratio', { ...run, stat: 'min' })).toBe(0.4);
    expect(await valueOf(r, 'anneal_run_importance_ratio', { ...run, stat: 'max' })).toBe(2.5);
    expect(await valueOf(r, 'anneal_run_importance_ratio_out_of_range_ratio', run)).toBe(0.03);
    expect(await valueOf(r, 'anneal_run_reward', { ...run, component: 'rubric' })).toBe(0.4);
    expect(await valueOf(r, 'anneal_run_base_reward', { ...run, component: 'qa' })).toBe(0.8);
    // components absent from (or null in) the record are not invented
    expect(
      await valueOf(r, 'anneal_run_base_reward', { ...run, component: 'rubric' }),
    ).toBeUndefined();
    expect(await valueOf(r, 'anneal_run_preference_score', run)).toBe(0.55);
    expect(await valueOf(r, 'anneal_run_tool_penalty', run)).toBe(0.1);
    expect(await valueOf(r, 'anneal_run_length_penalty', run)).toBe(0.05);
    expect(await valueOf(r, 'anneal_run_tool_calls_per_rollout', run)).toBe(2.25);
    expect(await valueOf(r, 'anneal_run_response_length_tokens', run)).toBe(310);
    expect(await valueOf(r, 'anneal_run_zero_variance_groups', run)).toBe(3);
    expect(await valueOf(r, 'anneal_run_rollout_tokens_total', run)).toBe(1000);
    expect(await valueOf(r, 'anneal_run_trained_tokens_total', run)).toBe(800);
    const phase = 'anneal_run_step_phase_duration_seconds';
    expect(await valueOf(r, phase, { ...run, phase: 'rollout' }, `${phase}_sum`)).toBe(12);
    expect(
      await valueOf(r, phase, { ...run, phase: 'checkpoint' }, `${phase}_count`),
    ).toBeUndefined();
  });

  it('leaves out what an executor does not report (an sft step has no reward)', async () => {
    const sink = workerSink();
    sink.emit('step:committed', {
      runId: 'sft1',
      step: 1,
      atMs: 1000,
      metrics: { loss: 2.1, grad_norm: 0.9 },
    });
    expect(await valueOf(sink.registry, 'anneal_run_loss', { run_id: 'sft1' })).toBe(2.1);
    expect(await samples(sink.registry, 'anneal_run_reward')).toEqual([]);
    expect(await samples(sink.registry, 'anneal_run_rollout_tokens_total')).toEqual([]);
  });

  it('counts a replayed step once (steps commit idempotently after a crash)', async () => {
    const sink = workerSink();
    sink.emit('step:committed', step('r1', 1));
    sink.emit('step:committed', step('r1', 2));
    sink.emit('step:committed', step('r1', 2, { loss: 0.1 }));
    const r = sink.registry;
    expect(await valueOf(r, 'anneal_run_rollout_tokens_total', { run_id: 'r1' })).toBe(2000);
    const count = 'anneal_run_step_phase_duration_seconds_count';
    expect(
      await valueOf(
        r,
        'anneal_run_step_phase_duration_seconds',
        { run_id: 'r1', phase: 'train' },
        count,
      ),
    ).toBe(2);
    expect(await valueOf(r, 'anneal_run_loss', { run_id: 'r1' })).toBe(0.1);
  });

  it('counts a firing by action; steps re-run after a rollback count again', async () => {
    const sink = workerSink();
    sink.emit('step:committed', step('r1', 1));
    sink.emit('step:committed', step('r1', 2));
    const rule = {
      name: 'nonfinite-loss',
      metric: 'loss',
      when: 'nonFinite',
      forSteps: 1,
      action: 'rollback',
      origin: 'operator',
    } as const;
    sink.emit('guardrail:fired', {
      runId: 'r1',
      step: 2,
      rule,
      values: [{ step: 2, value: 'NaN' }],
      action: 'rollback',
      restored: { step: 1, path: null },
      rollbacks: 1,
      reason: 'loss non-finite',
      at: new Date(0).toISOString(),
    });
    sink.emit('step:committed', step('r1', 2));
    const r = sink.registry;
    expect(
      await valueOf(r, 'anneal_run_guardrail_firings_total', { run_id: 'r1', action: 'rollback' }),
    ).toBe(1);
    expect(await valueOf(r, 'anneal_run_rollout_tokens_total', { run_id: 'r1' })).toBe(3000);
  });

  it("counts a run's requests, tokens and waits on each endpoint it shares (fleet:served)", async () => {
    const sink = workerSink();
    const served = { runId: 'r1', endpoint: 'gen', sequences: 2, waitedSeconds: 0.2 };
    sink.emit('fleet:served', { ...served, tokens: 30 });
    sink.emit('fleet:served', { ...served, tokens: 12, waitedSeconds: 3 });
    const r = sink.registry;
    const labels = { run_id: 'r1', endpoint: 'gen' };
    expect(await valueOf(r, 'anneal_run_fleet_requests_total', labels)).toBe(2);
    expect(await valueOf(r, 'anneal_run_fleet_tokens_total', labels)).toBe(42);
    const wait = 'anneal_run_fleet_wait_seconds';
    expect(await valueOf(r, wait, labels, `${wait}_count`)).toBe(2);
    expect(await valueOf(r, wait, labels, `${wait}_sum`)).toBeCloseTo(3.2);
  });

  it('rejects malformed numbers with the field name', () => {
    const sink = workerSink();
    expect(() => sink.emit('step:committed', step('r1', -1))).toThrow(/step must be an integer/);
    expect(() => sink.emit('step:committed', step('r1', 1, { rollout_tokens: -5 }))).toThrow(
      /rollout_tokens must be a finite count/,
    );
    expect(() =>
      sink.emit('step:committed', step('r1', 2, { 'phase_seconds/train': Number.NaN })),
    ).toThrow(/anneal_run_step_phase_duration_seconds: observed value must be finite/);
  });

  it('keeps a NaN loss visible instead of dropping it', async () => {
    const sink = workerSink();
    sink.emit('step:committed', step('r1', 1, { loss: Number.NaN }));
    expect(await valueOf(sink.registry, 'anneal_run_loss', { run_id: 'r1' })).toBeNaN();
  });
});

describe('step series derived from the step-metric table', () => {
  it('exports nothing for record-only keys and unknown keys', async () => {
    const sink = workerSink();
    sink.emit('step:committed', step('r1', 1));
    const text = await sink.registry.metrics();
    expect(text).not.toMatch(/grpo_objective|tool_baseline|custom_metric/);
  });

  it('registers and sets a series for a row added to the table', async () => {
    const table = {
      ...STEP_METRICS,
      entropy: {
        key: 'entropy/{component}',
        label: 'component',
        unit: 'none',
        kinds: ['grpo'],
        help: 'Mean token entropy of the step’s rollouts.',
        series: {
          name: 'anneal_run_entropy',
          type: 'gauge',
          section: 'rollouts',
          title: 'Entropy',
        },
      },
    } satisfies StepMetricTable;
    const sink = createMetrics(new Registry(), {
      app: 'worker',
      version: '1',
      worker,
      runSeriesGraceMs: 0,
      defaultMetrics: false,
      stepMetrics: table,
    });
    sinks.push(sink);
    sink.emit('step:committed', step('r1', 1, { 'entropy/qa': 2.5, 'entropy/all': null }));
    expect(await samples(sink.registry, 'anneal_run_entropy')).toEqual([
      { name: 'anneal_run_entropy', labels: { run_id: 'r1', component: 'qa' }, value: 2.5 },
    ]);
    // the default sink does not know the row
    expect(workerSink().registry.getSingleMetric('anneal_run_entropy')).toBeUndefined();
  });
});

describe('removeRunSeries', () => {
  it('removes every series of one run and keeps the others', async () => {
    const sink = workerSink();
    sink.emit('run:started', { runId: 'a', kind: 'grpo', pool: 'gpu', atMs: 0 });
    sink.emit('step:committed', step('a', 1));
    sink.emit('step:committed', step('b', 1));
    sink.emit('worker:slots', { busy: 2, total: 4 });
    expect(sink.runIds().sort()).toEqual(['a', 'b']);

    const removed = sink.removeRunSeries('a');
    expect(removed).toBeGreaterThan(20);
    const text = await sink.registry.metrics();
    expect(text).not.toMatch(/run_id="a"/);
    expect(text).toMatch(/anneal_run_step\{run_id="b"\} 1/);
    expect(text).toMatch(/anneal_worker_slots_busy\{pool="gpu",worker="w-1"\} 2/);
    expect(sink.runIds()).toEqual(['b']);
    expect(sink.removeRunSeries('a')).toBe(0);
  });

  it('on run:ended waits the grace period so the last step still gets scraped', async () => {
    vi.useFakeTimers();
    const sink = workerSink(60_000);
    sink.emit('run:started', { runId: 'a', kind: 'grpo', pool: 'gpu', atMs: 0 });
    sink.emit('step:committed', step('a', 1));
    sink.emit('run:ended', { runId: 'a', reason: 'succeeded', atMs: 2000 });
    vi.advanceTimersByTime(59_000);
    expect(await valueOf(sink.registry, 'anneal_run_step', { run_id: 'a' })).toBe(1);
    vi.advanceTimersByTime(1_000);
    expect(await sink.registry.metrics()).not.toMatch(/run_id="a"/);
  });

  it('a run that restarts on the same worker within the grace period keeps its series', async () => {
    vi.useFakeTimers();
    const sink = workerSink(60_000);
    sink.emit('step:committed', step('a', 1));
    sink.emit('run:ended', { runId: 'a', reason: 'released', atMs: 2000 });
    sink.emit('run:started', { runId: 'a', kind: 'grpo', pool: 'gpu', atMs: 3000 });
    vi.advanceTimersByTime(120_000);
    expect(await valueOf(sink.registry, 'anneal_run_step', { run_id: 'a' })).toBe(1);
    expect(await valueOf(sink.registry, 'anneal_run_info', { run_id: 'a', kind: 'grpo' })).toBe(1);
  });

  it('after a run ends its next step number starts counting again', async () => {
    const sink = workerSink(0);
    sink.emit('step:committed', step('a', 5));
    sink.emit('run:ended', { runId: 'a', reason: 'released', atMs: 0 });
    sink.emit('step:committed', step('a', 5));
    expect(await valueOf(sink.registry, 'anneal_run_rollout_tokens_total', { run_id: 'a' })).toBe(
      1000,
    );
  });
});

describe('worker process events', () => {
  it('maps heartbeat, slots, requests and failures with the worker’s pool and id', async () => {
    const sink = workerSink();
    const me = { pool: 'gpu', worker: 'w-1' };
    sink.emit('worker:heartbeat', { atMs: 1_700_000_000_500 });
    sink.emit('worker:slots', { busy: 1, total: 2 });
    sink.emit('request:started', { engine: 'inference' });
    sink.emit('request:started', { engine: 'inference' });
    sink.emit('request:finished', { engine: 'inference', outcome: 'error', durationSeconds: 0.2 });
    sink.emit('attempt:failed', { subsystem: 'inference', willRetry: true });
    sink.emit('attempt:failed', { subsystem: 'inference', willRetry: false });
    const r = sink.registry;
    expect(await valueOf(r, 'anneal_worker_heartbeat_timestamp_seconds', me)).toBe(1_700_000_000.5);
    expect(await valueOf(r, 'anneal_worker_slots', me)).toBe(2);
    expect(await valueOf(r, 'anneal_worker_slots_busy', me)).toBe(1);
    expect(
      await valueOf(r, 'anneal_worker_inflight_requests', { ...me, engine: 'inference' }),
    ).toBe(1);
    const duration = 'anneal_worker_engine_request_duration_seconds';
    const labels = { ...me, engine: 'inference', outcome: 'error' };
    expect(await valueOf(r, duration, labels, `${duration}_count`)).toBe(1);
    expect(await valueOf(r, 'anneal_worker_errors_total', { ...me, subsystem: 'inference' })).toBe(
      2,
    );
    expect(await valueOf(r, 'anneal_worker_retries_total', { ...me, subsystem: 'inference' })).toBe(
      1,
    );
    expect(await valueOf(r, 'anneal_build_info', { app: 'worker', version: '1.2.3' })).toBe(1);
  });

  it('exports the error and retry counters of every subsystem at 0 before any failure', async () => {
    const r = workerSink().registry;
    const me = { pool: 'gpu', worker: 'w-1' };
    for (const subsystem of SUBSYSTEMS) {
      expect(await valueOf(r, 'anneal_worker_errors_total', { ...me, subsystem })).toBe(0);
      expect(await valueOf(r, 'anneal_worker_retries_total', { ...me, subsystem })).toBe(0);
    }
  });

  it('adds metered usage to the tenant counters, item by item', async () => {
    const sink = workerSink();
    const tenant = { pool: 'gpu', worker: 'w-1', tenant: 'acme' };
    const usage = {
      promptTokens: 100,
      completionTokens: 40,
      trainedTokens: 30,
      toolCalls: 2,
      judgeCalls: 3,
      scoredTokens: 70,
      slotSeconds: 5,
    };
    const costUsd = {
      promptTokens: 0.1,
      completionTokens: 0.2,
      trainedTokens: 0.3,
      toolCalls: 0.4,
      judgeCalls: 0.06,
      scoredTokens: 0.07,
      slotSeconds: 0.5,
      total: 1.63,
    };
    sink.emit('usage:metered', { tenant: 'acme', usage, costUsd });
    sink.emit('usage:metered', { tenant: 'acme', usage, costUsd });
    const r = sink.registry;
    const tokens = (token_type: string) =>
      valueOf(r, 'anneal_tenant_tokens_total', { ...tenant, token_type });
    expect([
      await tokens('prompt'),
      await tokens('completion'),
      await tokens('trained'),
      await tokens('scored'),
    ]).toEqual([200, 80, 60, 140]);
    expect(await valueOf(r, 'anneal_tenant_tool_calls_total', tenant)).toBe(4);
    expect(await valueOf(r, 'anneal_tenant_judge_calls_total', tenant)).toBe(6);
    expect(await valueOf(r, 'anneal_tenant_slot_seconds_total', tenant)).toBe(10);
    const cost = (item: string) => valueOf(r, 'anneal_tenant_cost_usd_total', { ...tenant, item });
    expect(await cost('tool_calls')).toBeCloseTo(0.8, 12);
    expect(await cost('judge_calls')).toBeCloseTo(0.12, 12);
    expect(await cost('scored_tokens')).toBeCloseTo(0.14, 12);
    expect(await cost('slot_seconds')).toBeCloseTo(1, 12);
  });

  it('refuses control-plane events and control-plane metrics are not registered', () => {
    const sink = workerSink();
    expect(() =>
      sink.emit('http:responded', {
        route: '/x',
        method: 'GET',
        statusCode: 200,
        durationSeconds: 0,
      }),
    ).toThrow(/http:responded is a control-plane event; this sink is worker's/);
    expect(sink.registry.getSingleMetric('anneal_http_requests_total')).toBeUndefined();
  });
});

describe('control-plane events', () => {
  const controlPlane = () => {
    const sink = createMetrics(new Registry(), {
      app: 'control-plane',
      version: '1',
      defaultMetrics: false,
    });
    sinks.push(sink);
    return sink;
  };

  it('maps HTTP requests by route, method and status', async () => {
    const sink = controlPlane();
    sink.emit('http:responded', {
      route: '/v1/runs/:id',
      method: 'GET',
      statusCode: 404,
      durationSeconds: 0.003,
    });
    sink.emit('http:responded', {
      route: '/v1/runs/:id',
      method: 'GET',
      statusCode: 404,
      durationSeconds: 0.004,
    });
    const r = sink.registry;
    const labels = { route: '/v1/runs/:id', method: 'GET' };
    expect(await valueOf(r, 'anneal_http_requests_total', { ...labels, status_code: '404' })).toBe(
      2,
    );
    const d = 'anneal_http_request_duration_seconds';
    expect(await valueOf(r, d, { ...labels, le: '0.005' }, `${d}_bucket`)).toBe(2);
    expect(await valueOf(r, d, { ...labels, le: '0.0025' }, `${d}_bucket`)).toBe(0);
  });

  it('maps a pool snapshot to queue depth, oldest wait and worker counts', async () => {
    const sink = controlPlane();
    sink.emit('pool:observed', {
      pool: 'gpu',
      queue: { waiting: 3, prioritized: 1, delayed: 0, active: 2, paused: 0 },
      oldestWaitingAgeSeconds: null,
      workers: { online: 4, busy: 2, draining: 1 },
    });
    const r = sink.registry;
    expect(await valueOf(r, 'anneal_queue_depth', { pool: 'gpu', state: 'waiting' })).toBe(3);
    expect(await valueOf(r, 'anneal_queue_depth', { pool: 'gpu', state: 'active' })).toBe(2);
    expect(await valueOf(r, 'anneal_queue_oldest_waiting_age_seconds', { pool: 'gpu' })).toBe(0);
    expect(await valueOf(r, 'anneal_pool_workers', { pool: 'gpu', state: 'draining' })).toBe(1);
  });

  it('exports heartbeat ages of known workers as a snapshot (departed workers are dropped)', async () => {
    const sink = controlPlane();
    const age = 'anneal_pool_worker_heartbeat_age_seconds';
    sink.emit('workers:observed', {
      workers: [
        { pool: 'gpu', worker: 'w1', heartbeatAgeSeconds: 4 },
        { pool: 'gpu', worker: 'w2', heartbeatAgeSeconds: 600 },
      ],
    });
    expect(await valueOf(sink.registry, age, { pool: 'gpu', worker: 'w2' })).toBe(600);
    sink.emit('workers:observed', {
      workers: [{ pool: 'gpu', worker: 'w1', heartbeatAgeSeconds: -0.5 }],
    });
    const all = await samples(sink.registry, age);
    // w2 left the registry; a heartbeat from a clock slightly ahead reads as 0, not negative
    expect(all).toEqual([
      expect.objectContaining({ labels: { pool: 'gpu', worker: 'w1' }, value: 0 }),
    ]);
  });

  it('reports every state x kind of the run counts, zero when absent', async () => {
    const sink = controlPlane();
    sink.emit('runs:observed', {
      counts: [
        { state: 'running', kind: 'grpo', count: 2 },
        { state: 'running', kind: 'grpo', count: 1 },
      ],
    });
    const all = await samples(sink.registry, 'anneal_runs');
    expect(all).toHaveLength(RUN_STATES.length * RUN_KINDS.length);
    expect(await valueOf(sink.registry, 'anneal_runs', { state: 'paused', kind: 'eval' })).toBe(0);
    expect(await valueOf(sink.registry, 'anneal_runs', { state: 'running', kind: 'grpo' })).toBe(3);
    expect(await valueOf(sink.registry, 'anneal_runs', { state: 'failed', kind: 'sft' })).toBe(0);
  });

  it('counts transitions and observes the queue wait when a run starts', async () => {
    const sink = controlPlane();
    sink.emit('run:transitioned', { runId: 'a', kind: 'grpo', pool: 'gpu', state: 'queued' });
    sink.emit('run:transitioned', {
      runId: 'a',
      kind: 'grpo',
      pool: 'gpu',
      state: 'running',
      queuedSeconds: 42,
    });
    const r = sink.registry;
    expect(
      await valueOf(r, 'anneal_runs_transitions_total', { state: 'running', kind: 'grpo' }),
    ).toBe(1);
    const w = 'anneal_queue_wait_duration_seconds';
    expect(await valueOf(r, w, { pool: 'gpu' }, `${w}_sum`)).toBe(42);
    expect(await r.metrics()).not.toMatch(/run_id/);
  });
});

describe('createMetrics', () => {
  it('needs the worker identity for the worker app', () => {
    expect(() => createMetrics(new Registry(), { app: 'worker', version: '1' })).toThrow(
      /options.worker/,
    );
  });

  it('refuses to register twice on one registry', () => {
    const registry = new Registry();
    sinks.push(
      createMetrics(registry, { app: 'control-plane', version: '1', defaultMetrics: false }),
    );
    expect(() => createMetrics(registry, { app: 'control-plane', version: '1' })).toThrow(
      /already registered/,
    );
  });

  it('exports process metrics by default, on the app registry only', async () => {
    const registry = new Registry();
    sinks.push(createMetrics(registry, { app: 'control-plane', version: '1' }));
    expect(await registry.metrics()).toMatch(/process_cpu_seconds_total/);
  });
});
