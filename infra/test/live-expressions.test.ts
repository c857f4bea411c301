// A real Prometheus scrapes two in-process exporters fed through @anneal/telemetry exactly as the
// apps feed it, with the shipped rules loaded; then every dashboard, recording-rule and KEDA
// expression must return data, and every alert expression must evaluate. (The full-stack test
// does the same against the real control plane and worker.)
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createMetrics, Registry, type MetricsSink } from '@anneal/telemetry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listExpressions, selectsEvalCells } from '../src/expressions.ts';
import { startPrometheus, type LivePrometheus } from '../src/live-prometheus.ts';
import { localPrometheusConfig } from '../src/local-prometheus.ts';
import { expandGrafanaVariables } from '../src/promql.ts';

const RUN_ID = 'run_01J0000000000000000000LIVE';
/** An eval run beside the training run: its cells feed the Run dashboard's Evaluation row. */
const EVAL_RUN_ID = 'run_01J00000000000000000EVALS';
const EVAL_CHECKPOINTS = 2;
const EVAL_BUDGETS = [0, 1, 3];
let step = 0;

const worker = createMetrics(new Registry(), {
  app: 'worker',
  version: 'test',
  worker: { pool: 'gpu', id: 'w-1' },
  runSeriesGraceMs: 0,
  defaultMetrics: false,
});
const controlPlane = createMetrics(new Registry(), {
  app: 'control-plane',
  version: 'test',
  defaultMetrics: false,
});

// A notify rule fired once, before the first scrape: the Run dashboard's firings panel has its
// series (an increase of 0 from then on), and AnnealGuardrailFired, which alerts on an increase,
// stays quiet like every other alert here.
worker.emit('guardrail:fired', {
  runId: RUN_ID,
  step: 1,
  rule: {
    name: 'kl-above',
    metric: 'train_inference_kl',
    when: 'above',
    value: 0.5,
    forSteps: 1,
    action: 'notify',
    origin: 'spec',
  },
  values: [{ step: 1, value: 0.75 }],
  action: 'notify',
  reason: 'train_inference_kl 0.75 above 0.5',
  at: new Date().toISOString(),
});

/** One training step and its worker activity, as the worker reports them. */
function workerTick(): void {
  step += 1;
  const wobble = step % 3;
  worker.emit('worker:heartbeat', { atMs: Date.now() });
  worker.emit('worker:slots', { busy: 1, total: 1 });
  worker.emit('request:started', { engine: 'inference' });
  worker.emit('request:finished', {
    engine: 'inference',
    outcome: 'ok',
    durationSeconds: 0.2 + wobble / 10,
  });
  worker.emit('request:started', { engine: 'trainer' });
  // Two runs sharing endpoint gen (docs/operations.md "Fair share of an endpoint").
  for (const [runId, tokens] of [
    [RUN_ID, 300],
    [EVAL_RUN_ID, 100],
  ] as const) {
    worker.emit('fleet:served', {
      runId,
      endpoint: 'gen',
      sequences: 4,
      tokens,
      waitedSeconds: 0.05 + wobble / 100,
    });
  }
  worker.emit('attempt:failed', { subsystem: 'inference', willRetry: true });
  worker.emit('usage:metered', {
    tenant: 'acme',
    usage: {
      promptTokens: 4000,
      completionTokens: 2400,
      trainedTokens: 2000,
      toolCalls: 8,
      judgeCalls: 0,
      scoredTokens: 0,
      slotSeconds: 1,
    },
    costUsd: {
      promptTokens: 0.0008,
      completionTokens: 0.002,
      trainedTokens: 0.003,
      toolCalls: 0.04,
      judgeCalls: 0,
      scoredTokens: 0,
      slotSeconds: 0.001,
      total: 0.0468,
    },
  });
  worker.emit('step:committed', {
    runId: RUN_ID,
    step,
    atMs: Date.now(),
    metrics: {
      loss: 0.5 - step / 1000,
      grad_norm: 1 + wobble / 5,
      'train_inference_kl/k1': 0.0004,
      train_inference_kl: 0.0008 + wobble / 1e4,
      'is_ratio/mean': 1,
      'is_ratio/min': 0.6,
      'is_ratio/max': 1.7,
      'is_ratio/out_of_range_fraction': 0.01,
      'reward/all': 0.4,
      'reward/qa': 0.5,
      'reward/rubric': 0.3,
      'base_reward/all': 0.6,
      'base_reward/qa': 0.7,
      'base_reward/rubric': 0.5,
      preference_score: 0.55,
      tool_penalty: 0.05,
      length_penalty: 0.02,
      tool_calls_per_rollout: 2,
      response_tokens: 300,
      zero_variance_groups: 1,
      'phase_seconds/rollout': 0.4,
      'phase_seconds/reward': 0.1,
      'phase_seconds/train': 0.3,
      'phase_seconds/weight_sync': 0.05,
      'phase_seconds/checkpoint': 0.02,
      rollout_tokens: 2400,
      trained_tokens: 2000,
      // pipelined GRPO (rollout.maxPolicyLag > 0)
      'policy_lag/mean': 0.5,
      'policy_lag/min': 0,
      'policy_lag/max': 1,
      'is_ratio_by_lag/fresh': 1,
      'is_ratio_by_lag/lagged': 0.97,
      'train_inference_kl_by_lag/fresh': 0.0008,
      'train_inference_kl_by_lag/lagged': 0.002,
      mismatch_kl: 0.0008,
      'mismatch_kl/tokens': 512,
      'busy_fraction/trainer': 0.6,
      'busy_fraction/sampler': 0.9,
    },
  });
}

/** Accuracy of cell (checkpoint c, budget b): rises with b, checkpoint 1 above checkpoint 0. */
const evalAccuracy = (c: number, b: number) => 0.2 + 0.1 * c + 0.05 * b;

/** An eval sweep, one committed step per checkpoint × budget, as the eval executor commits it. */
function evalSweep(): void {
  let evalStep = 0;
  for (let c = 0; c < EVAL_CHECKPOINTS; c++) {
    for (const b of EVAL_BUDGETS) {
      const accuracy = evalAccuracy(c, b);
      worker.emit('step:committed', {
        runId: EVAL_RUN_ID,
        step: ++evalStep,
        atMs: Date.now(),
        metrics: {
          'eval/checkpoint': c,
          'eval/budget': b,
          examples: 20,
          'eval/correct': accuracy * 20,
          accuracy,
          'accuracy/ci_low': accuracy - 0.15,
          'accuracy/ci_high': accuracy + 0.15,
          tool_calls_per_rollout: b + 0.5, // at b = 0 the calls are refused: broken
          broken_tool_call_rate: b === 0 ? 1 : 0.1,
          cost_per_query_usd: 0.0004 + b * 0.005,
          preference_win_rate: c === 0 ? null : 0.6,
          response_tokens: 40,
        },
      });
    }
  }
}

/** API traffic and a pool snapshot, as the control plane reports them on each scrape. */
function controlPlaneTick(): void {
  for (const statusCode of [200, 201, 404, 500]) {
    controlPlane.emit('http:responded', {
      route: '/v1/runs/:id',
      method: 'GET',
      statusCode,
      durationSeconds: 0.004,
    });
  }
  // the pools of the shipped operator configs (compose: default, gpu; Kubernetes: cpu, gpu)
  for (const pool of ['default', 'cpu', 'gpu']) {
    controlPlane.emit('pool:observed', {
      pool,
      queue: { waiting: 2, prioritized: 0, delayed: 0, active: 1, paused: 0 },
      oldestWaitingAgeSeconds: 12,
      workers: { online: 1, busy: 1, draining: 0 },
    });
  }
  controlPlane.emit('runs:observed', { counts: [{ state: 'running', kind: 'grpo', count: 1 }] });
  controlPlane.emit('run:transitioned', {
    runId: RUN_ID,
    kind: 'grpo',
    pool: 'gpu',
    state: 'running',
    queuedSeconds: 12,
  });
}

function exporter(sink: MetricsSink, tick: () => void): Promise<Server> {
  const server = createServer((req, res) => {
    tick();
    void sink.registry.metrics().then((text) => {
      res.writeHead(200, { 'content-type': sink.registry.contentType });
      res.end(text);
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

const address = (s: Server) => `127.0.0.1:${(s.address() as AddressInfo).port}`;
let servers: Server[] = [];
let prometheus: LivePrometheus | undefined;

beforeAll(async () => {
  evalSweep();
  servers = [await exporter(controlPlane, controlPlaneTick), await exporter(worker, workerTick)];
  const config = localPrometheusConfig({
    'anneal-control-plane': [address(servers[0]!)],
    'anneal-worker': [address(servers[1]!)],
  });
  prometheus = await startPrometheus(config);
  // enough scrapes for rates, and one rule evaluation after them
  await prometheus.waitFor('count_over_time(up{job="anneal-worker"}[1m]) >= 4', 30_000);
  await prometheus.waitFor('run_id:anneal_run_grad_norm:zscore1h', 30_000);
}, 60_000);

afterAll(async () => {
  await prometheus?.stop();
  for (const s of servers) s.close();
  worker.close();
});

describe('shipped expressions against a live Prometheus', () => {
  const expressions = listExpressions();
  // $run_id: the eval run for the Evaluation row, the training run everywhere else
  const valuesFor = (expr: string) => ({
    run_id: selectsEvalCells(expr) ? EVAL_RUN_ID : RUN_ID,
    pool: '.*',
    model_name: '.*',
  });
  const values = valuesFor('');

  it('every Anneal dashboard, recording and KEDA expression returns data', async () => {
    const empty: string[] = [];
    for (const e of expressions.filter((x) => !x.vllm && x.kind !== 'alert')) {
      const expr = expandGrafanaVariables(e.expr, valuesFor(e.expr));
      try {
        await prometheus!.waitFor(expr, 5_000);
      } catch {
        empty.push(`${e.origin}: ${expr}`);
      }
    }
    expect(empty).toEqual([]);
  }, 120_000);

  it('the Evaluation row reads every cell of the eval run, one series per checkpoint × budget', async () => {
    const evalQueries = expressions.filter(
      (e) => e.kind === 'dashboard' && selectsEvalCells(e.expr),
    );
    expect(evalQueries.length).toBeGreaterThanOrEqual(4);
    const cells = EVAL_BUDGETS.flatMap((b) =>
      Array.from({ length: EVAL_CHECKPOINTS }, (_, c) => `${c}/${b}`),
    ).sort();
    for (const e of evalQueries) {
      const samples = await prometheus!.query(expandGrafanaVariables(e.expr, valuesFor(e.expr)));
      const got = samples.map((s) => `${s.metric['checkpoint']}/${s.metric['budget']}`).sort();
      expect(got, e.origin).toEqual(cells);
    }
    const accuracy = evalQueries.find((e) => e.expr.includes('anneal_run_eval_accuracy_ratio'))!;
    const samples = await prometheus!.query(
      expandGrafanaVariables(accuracy.expr, valuesFor(accuracy.expr)),
    );
    for (const s of samples) {
      const [c, b] = [Number(s.metric['checkpoint']), Number(s.metric['budget'])];
      expect(Number(s.value[1]), `cell ${c}/${b}`).toBeCloseTo(evalAccuracy(c, b), 12);
    }
  });

  it('alert and vLLM expressions evaluate without error (no vLLM here; alerts are not firing)', async () => {
    const quiet = expressions.filter((x) => x.vllm || x.kind === 'alert');
    expect(quiet.length).toBeGreaterThan(10);
    for (const e of quiet) {
      await expect(
        prometheus!.query(expandGrafanaVariables(e.expr, values)),
        e.origin,
      ).resolves.toBeDefined();
    }
    const firing = await prometheus!.query('ALERTS{alertstate="firing"}');
    expect(firing.map((s) => s.metric['alertname'])).toEqual([]);
  });
});
