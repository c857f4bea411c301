// `anneal demo --quick` end to end on a real Redis: a local control plane and worker with the
// embedded engines, SFT -> RM -> GRPO (scored by the registered rm run) -> eval, all through the
// REST API. Checks the report's structure, that every GRPO step's reward, KL and grad norm are
// finite and stored (GET /v1/runs/{id}/metrics), and that the worker's /metrics exports them.
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import type { StepRecord } from '@anneal/protocol';
import { ApiClient } from '../src/api/client.ts';
import { DemoRunError, followRun, readSteps, submitRun } from '../src/demo/api.ts';
import { PlainDisplay } from '../src/demo/display.ts';
import type { DemoReport } from '../src/demo/report.ts';
import { type DemoSession, runDemo } from '../src/demo/run-demo.ts';
import { QUICK_SIZES } from '../src/demo/specs.ts';
import { startStack } from '../src/demo/stack.ts';
import { REDIS_URL } from './cli-process.ts';

const prefix = `{anneal-demo-test-${randomUUID()}}`;
let dir: string | undefined;

afterAll(async () => {
  const redis = new Redis(REDIS_URL);
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const isFinite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** The sample value of `name{labels}` in Prometheus text, or undefined. */
function sample(text: string, name: string, labels: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

interface GrpoCheck {
  runId: string;
  steps: StepRecord[];
  scrape: string;
}

async function checkGrpo(session: DemoSession, runId: string): Promise<GrpoCheck> {
  const steps = await readSteps(session.client, runId);
  const scrape = await (await fetch(session.stack!.metricsUrl)).text();
  return { runId, steps, scrape };
}

it('runs the quick demo through the API and reports measured numbers', async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'anneal-demo-test-'));
  const reportPath = path.join(dir, 'report.json');
  let output = '';
  let grpo: GrpoCheck | undefined;
  let control: { runId: string; steps: StepRecord[] } | undefined;
  const result = await runDemo({
    seed: 1,
    stepsScale: 1,
    quick: true,
    reportPath,
    env: { REDIS_URL },
    keyPrefix: prefix,
    display: new PlainDisplay({ write: (text: string) => (output += text) }),
    // While the GRPO run's stack is still up (its series stay exported for the grace period).
    onRunSucceeded: async (phase, run, session) => {
      if (phase === 'grpo') grpo = await checkGrpo(session, run.id);
      if (phase === 'control')
        control = { runId: run.id, steps: await readSteps(session.client, run.id) };
    },
  });

  // report.json is what runDemo returned, with the documented structure.
  const report = JSON.parse(await readFile(reportPath, 'utf8')) as DemoReport;
  expect(report).toEqual(result.report);
  expect(Object.keys(report).sort()).toEqual([
    'eval',
    'grpo',
    'guardrails',
    'rm',
    'runs',
    'sft',
    'wallSeconds',
  ]);
  // The default guardrails were on and this healthy run gave them nothing to fire on.
  expect(report.guardrails).toEqual({ fired: false, rollbacks: 0, firings: [] });
  expect(report.sft.steps).toBe(QUICK_SIZES.sft.steps);
  expect(report.grpo.steps).toBe(QUICK_SIZES.grpo.steps);
  for (const value of [
    report.wallSeconds,
    report.sft.finalLoss,
    report.rm.heldOutPairAccuracy,
    report.grpo.rewardFirst5Mean,
    report.grpo.rewardLast5Mean,
    report.grpo.klMax,
    report.grpo.gradNormMedian,
    ...(['before', 'control', 'after'] as const).flatMap((k) => [
      report.eval[k].accuracy,
      report.eval[k].meanToolCalls,
      report.eval[k].meanToolCallsToolFree,
    ]),
  ]) {
    expect(isFinite(value), `report value ${String(value)}`).toBe(true);
  }
  // The eval is a budget sweep: one curve point per budget, and the chart beside the report.
  expect(report.eval.curve?.map((p) => p.budget)).toEqual(QUICK_SIZES.eval.budgets);
  expect(report.eval.chart).toBe('eval-curve.svg');
  const chart = await readFile(path.join(path.dirname(reportPath), report.eval.chart!), 'utf8');
  expect(chart.match(/class="curve"/g)).toHaveLength(3); // SFT, control, GRPO
  // The control arm: SFT continued from the SFT checkpoint for as many steps as GRPO took.
  expect(control?.runId).toBe(report.runs.control);
  expect(control?.steps.length).toBe(QUICK_SIZES.grpo.steps);
  // Each recipe dimension of the three checkpoints, paired on the same questions, with p-values.
  const comparison = report.eval.comparison!;
  expect(comparison.budget).toBe(QUICK_SIZES.eval.maxToolCalls);
  expect(comparison.questions).toBe(report.eval.examples);
  expect(comparison.dimensions.map((d) => [d.name, d.test])).toEqual([
    ['accuracy', 'mcnemar-exact'],
    ['toolCalls', 'wilcoxon-signed-rank-exact'],
    ['toolCallsToolFree', 'wilcoxon-signed-rank-exact'],
    ['failedCalls', 'wilcoxon-signed-rank-exact'],
    ['length', 'wilcoxon-signed-rank-exact'],
    ['preference', 'wilcoxon-signed-rank-exact'],
  ]);
  const accuracy = comparison.dimensions[0]!;
  expect(accuracy.sft).toBeCloseTo(report.eval.before.accuracy!, 12);
  expect(accuracy.control).toBeCloseTo(report.eval.control.accuracy!, 12);
  expect(accuracy.grpo).toBeCloseTo(report.eval.after.accuracy!, 12);
  for (const d of comparison.dimensions) {
    if (d.questions === 0) continue; // e.g. no tool-free question among the quick eval's few
    for (const v of [d.sft, d.control, d.grpo]) expect(isFinite(v), `${d.name} mean`).toBe(true);
    for (const p of [d.pGrpoVsControl, d.pGrpoVsSft]) {
      expect(isFinite(p) && p >= 0 && p <= 1, `${d.name} p ${String(p)}`).toBe(true);
    }
  }
  // The eval scored every answer with the demo's reward model: preference is measured.
  expect(comparison.dimensions[5]!.questions).toBe(report.eval.examples);
  expect(report.rm.heldOutPairAccuracy).toBeGreaterThanOrEqual(0);
  expect(report.rm.heldOutPairAccuracy).toBeLessThanOrEqual(1);

  // Every GRPO step stored, each with finite reward, KL (< 1e-2) and grad norm.
  expect(grpo).toBeDefined();
  const { runId, steps, scrape } = grpo!;
  expect(runId).toBe(report.runs.grpo);
  expect(steps.map((s) => s.step)).toEqual(
    Array.from({ length: QUICK_SIZES.grpo.steps }, (_, i) => i + 1),
  );
  for (const { step, metrics } of steps) {
    for (const name of ['reward/all', 'train_inference_kl', 'grad_norm']) {
      expect(isFinite(metrics[name]), `step ${step} ${name}`).toBe(true);
    }
    expect(metrics['train_inference_kl']!).toBeLessThan(1e-2);
  }
  // The report's numbers are the stored ones.
  const rewards = steps.map((s) => s.metrics['reward/all']!);
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  expect(report.grpo.rewardFirst5Mean).toBeCloseTo(mean(rewards.slice(0, 5)), 12);
  expect(report.grpo.rewardLast5Mean).toBeCloseTo(mean(rewards.slice(-5)), 12);
  expect(report.grpo.klMax).toBe(Math.max(...steps.map((s) => s.metrics['train_inference_kl']!)));

  // The worker's /metrics exports the run's last committed step (gauges hold the last value).
  const last = steps.at(-1)!.metrics;
  const run = `run_id="${runId}"`;
  const exported = {
    reward: sample(scrape, 'anneal_run_reward', `${run},component="all"`),
    kl: sample(scrape, 'anneal_run_train_inference_kl', `${run},estimator="k3"`),
    gradNorm: sample(scrape, 'anneal_run_grad_norm', run),
  };
  expect(exported.reward).toBeCloseTo(last['reward/all']!, 9);
  expect(exported.kl).toBeCloseTo(last['train_inference_kl']!, 15);
  expect(exported.gradNorm).toBeCloseTo(last['grad_norm']!, 9);

  // Plain (non-TTY) output: one line per step and the GRPO table rows.
  expect(output).toMatch(/^sft step 1\/\d+ {2}loss /m);
  expect(output).toMatch(/^ step +R +r_base +s +tools +length +KL +grad$/m);
  expect(output).toContain(`registering rm run ${report.runs.rm} as reward model 'demo-rm'`);
  expect(output).toContain('docker compose up');
}, 300_000);

it('a failed run ends the follow with the reason the run failed with', async () => {
  dir ??= await mkdtemp(path.join(os.tmpdir(), 'anneal-demo-test-'));
  const token = `demo-test-token-${randomUUID()}`;
  // A reward model registered under a run id that does not exist: the control plane accepts the
  // name, the worker fails the run when it resolves the model.
  const missing = 'run_01J00000000000000000000000';
  const stack = await startStack(
    {
      redisUrl: REDIS_URL,
      keyPrefix: prefix,
      token,
      artifactDir: path.join(dir, 'failing', 'artifacts'),
      logFile: path.join(dir, 'failing', 'stack.log'),
      runSeriesGraceSeconds: 0,
    },
    [{ name: 'demo-rm', run: missing }],
  );
  try {
    const client = new ApiClient({ url: stack.url, token });
    const run = await submitRun(client, {
      kind: 'grpo',
      steps: 1,
      endpoints: { rewardModel: 'demo-rm' },
    });
    const seen: string[] = [];
    const error = await followRun(client, run.id, (e) => seen.push(e.type)).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(DemoRunError);
    const failure = error as DemoRunError;
    expect(failure.run.state).toBe('failed');
    expect(failure.reason).toContain(missing);
    expect(failure.message).toBe(`grpo run ${run.id} failed: ${failure.reason}`);
    expect(seen.at(-1)).toBe('run:state');
  } finally {
    await stack.close();
  }
}, 120_000);
