// The shipped observability against the real apps: a Redis-backed control plane and one worker
// with the embedded engines (in this process), a short embedded run (sft, then grpo from its
// checkpoint), and a real Prometheus (Debian package) scraping both /metrics endpoints every
// second with the shipped rules loaded. Then EVERY PromQL expression Anneal ships is evaluated
// through Prometheus' HTTP API (/api/v1/query) and must return data:
// - dashboard panels and variables, recording rules, KEDA triggers: as written (Grafana
//   variables expanded: run_id = the grpo run, or for the Evaluation row an eval run of both
//   checkpoints over two tool-call budgets, pool = .*);
// - alert rules: their probe (alert-probe.ts: comparisons in `bool` form, no `offset`), which
//   returns data exactly when the series the alert reads exist; the alert itself must evaluate;
// - vLLM expressions (no vLLM here; also the Fleet row's fair-share series, which only runs on a
//   vLLM endpoint declaring maxNumSeqs have — live-expressions.test.ts gives them data): must
//   evaluate (valid PromQL), no data required.
// The worker keeps a finished run's series for ANNEAL_RUN_SERIES_GRACE_SECONDS; the test sets
// it above its own duration so the run's last values are still scraped when it evaluates.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alertProbe } from '../src/alert-probe.ts';
import { listExpressions, selectsEvalCells } from '../src/expressions.ts';
import { type LivePrometheus, startPrometheus } from '../src/live-prometheus.ts';
import { localPrometheusConfig } from '../src/local-prometheus.ts';
import { expandGrafanaVariables } from '../src/promql.ts';
import { type LocalStack, startLocalStack } from './support/local-stack.ts';

let stack: LocalStack | undefined;
let prometheus: LivePrometheus | undefined;
let grpoRun = '';
let evalRun = '';

const hostPort = (url: string) => new URL(url).host;

beforeAll(async () => {
  // The pools of the shipped configs (compose: default; Kubernetes: cpu, gpu): the KEDA
  // triggers select pool="cpu" and pool="gpu". The worker serves "default".
  stack = await startLocalStack({
    pools: { default: 1, cpu: 2, gpu: 1 },
    worker: true,
    runSeriesGraceSeconds: 900,
  });
  prometheus = await startPrometheus(
    localPrometheusConfig({
      'anneal-control-plane': [hostPort(stack.url)],
      'anneal-worker': [hostPort(stack.worker!.metricsUrl)],
    }),
  );
  // A short embedded run: 2 sft steps, then 3 grpo steps from the sft checkpoint. Half QA and
  // half rubric prompts (systematic allocation: one of each per step), so the per-component
  // reward series both exist; a checkpoint every step, so the checkpoint phase is timed too.
  const sft = await stack.submit('kind: sft\nsteps: 2\nbatchSize: 4\ncheckpointInterval: 1\n');
  await stack.waitForSuccess(sft, 180_000);
  grpoRun = await stack.submit(
    [
      'kind: grpo',
      'steps: 3',
      'checkpointInterval: 1',
      `model: { checkpoint: { run: ${sft} } }`,
      'rollout: { groupSize: 4, promptsPerStep: 2, maxTokens: 32 }',
      'data: { mix: [{ source: search-qa, weight: 0.5 }, { source: rubric-chat, weight: 0.5 }] }',
    ].join('\n'),
  );
  await stack.waitForSuccess(grpoRun, 240_000);
  // Both checkpoints at two budgets, priced: the Evaluation row's cells (b = 0 refuses every
  // call, so a call there is a broken one). The demo model was trained without the statement.
  evalRun = await stack.submit(
    [
      'kind: eval',
      `models: [{ checkpoint: { run: ${sft} } }, { checkpoint: { run: ${grpoRun} } }]`,
      'examples: 8',
      'budgets: { toolCallBudgets: [0, 2], statePrompt: false, maxOutputTokens: 32 }',
      'prices: { promptPerMillionTokens: 1, completionPerMillionTokens: 2, perToolCall: 0.001 }',
    ].join('\n'),
  );
  await stack.waitForSuccess(evalRun, 240_000);
  // A client error (an unknown run), as any real API sees: the 4xx panel has a series.
  await stack.api('GET', '/v1/runs/run_00000000000000000000000000', undefined, true);
  // The run's last step scraped, and several scrapes of both apps since (rates need two).
  await prometheus.waitFor(`anneal_run_step{run_id="${grpoRun}"} == 3`, 60_000);
  await prometheus.waitFor(`anneal_run_step{run_id="${evalRun}"} == 4`, 60_000);
  await prometheus.waitFor('count_over_time(up{job="anneal-control-plane"}[1m]) >= 5', 60_000);
}, 600_000);

afterAll(async () => {
  await prometheus?.stop();
  await stack?.close();
});

/** Polls until the expression returns data; the error names it when it never does. */
async function hasData(expr: string, timeoutMs: number): Promise<boolean> {
  try {
    await prometheus!.waitFor(expr, timeoutMs);
    return true;
  } catch {
    return false;
  }
}

describe('every shipped expression against the running stack', () => {
  const expressions = listExpressions();
  const values = (expr = '') => ({
    run_id: selectsEvalCells(expr) ? evalRun : grpoRun,
    pool: '.*',
    model_name: '.*',
  });

  it('lists dashboards, variables, recording and alert rules and KEDA triggers', () => {
    const kinds = new Set(expressions.map((e) => e.kind));
    expect([...kinds].sort()).toEqual([
      'alert',
      'dashboard',
      'dashboard-variable',
      'keda',
      'recording',
    ]);
  });

  it('dashboard panels and variables, recording rules and KEDA queries return data', async () => {
    const empty: string[] = [];
    const fromThisStack = (x: (typeof expressions)[number]) =>
      !x.vllm && !x.fleetShare && x.kind !== 'alert';
    for (const e of expressions.filter(fromThisStack)) {
      const expr = expandGrafanaVariables(e.expr, values(e.expr));
      if (!(await hasData(expr, 20_000))) empty.push(`${e.origin}: ${expr}`);
    }
    expect(empty).toEqual([]);
  }, 600_000);

  it('alert rules evaluate, and the series they read exist (alert probes return data)', async () => {
    const alerts = expressions.filter((x) => x.kind === 'alert');
    expect(alerts.length).toBeGreaterThanOrEqual(6);
    const empty: string[] = [];
    for (const alert of alerts) {
      await expect(prometheus!.query(alert.expr), alert.origin).resolves.toBeInstanceOf(Array);
      const probe = alertProbe(alert.expr);
      if (!(await hasData(probe, 20_000))) empty.push(`${alert.origin}: ${probe}`);
    }
    expect(empty).toEqual([]);
  }, 300_000);

  it('vLLM and fleet-share expressions are valid PromQL (no vLLM in this stack, so no data)', async () => {
    const vllm = expressions.filter((x) => x.vllm || x.fleetShare);
    expect(vllm.filter((x) => x.vllm).length).toBeGreaterThan(5);
    expect(vllm.filter((x) => x.fleetShare).length).toBeGreaterThanOrEqual(4);
    for (const e of vllm) {
      const samples = await prometheus!.query(expandGrafanaVariables(e.expr, values()));
      expect(samples, e.origin).toEqual([]);
    }
  });
});
