// `anneal demo`: the whole recipe through the REST API on a local stack — SFT -> reward model ->
// GRPO from the SFT checkpoint, scored by that reward model, beside a same-compute control (SFT
// continued as many steps from the same checkpoint) -> eval of the SFT, control and GRPO
// checkpoints with paired tests — with live progress, a summary and `.anneal/demo/report.json`.
import { randomBytes } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { RunEvent, RunResource } from '@anneal/protocol';
import { ApiClient } from '../api/client.ts';
import { cancelRun, followRun, readChart, readItems, readSteps, submitRun } from './api.ts';
import type { DemoDisplay, Phase } from './display.ts';
import { type DemoRedis, ensureRedis } from './redis.ts';
import { type DemoReport, type TargetCheck, buildReport, checkTargets } from './report.ts';
import {
  DEMO_REWARD_MODEL,
  type DemoSizes,
  type RunSpecJson,
  controlSpec,
  demoSizes,
  evalSpec,
  grpoSpec,
  rmSpec,
  sftSpec,
} from './specs.ts';
import { type RunningStack, type StackOptions, startStack } from './stack.ts';
import { printSummary } from './summary.ts';

export interface DemoOptions {
  seed: number;
  stepsScale: number;
  quick: boolean;
  /** rollout.maxPolicyLag of the GRPO run (default 0: on-policy). */
  maxPolicyLag?: number;
  /** Where report.json goes; its directory also holds the per-demo work directory. */
  reportPath: string;
  /** Environment (REDIS_URL) as parsed once by the command. */
  env: Readonly<Record<string, string | undefined>>;
  display: DemoDisplay;
  /** Aborted on Ctrl-C: the current run is cancelled and everything shut down. */
  signal?: AbortSignal;
  /** Remote mode: an existing control plane (e.g. `docker compose up`) instead of a local stack. */
  remote?: { url: string; token: string; rewardModel?: string };
  /** Seconds a finished run's series stay on the worker's /metrics (default 60). */
  runSeriesGraceSeconds?: number;
  /** Redis key prefix of the local stack (default: a new `{anneal-demo-…}` per demo). */
  keyPrefix?: string;
  /** Called after each run succeeded, while the stack that ran it is still up (tests). */
  onRunSucceeded?: (phase: Phase, run: RunResource, session: DemoSession) => Promise<void>;
}

export interface DemoResult {
  report: DemoReport;
  targets: TargetCheck[];
  reportPath: string;
}

/** The API client the demo uses and the local stack behind it (null in remote mode). */
export interface DemoSession {
  client: ApiClient;
  stack: RunningStack | null;
}

const STEPS_OF = (spec: RunSpecJson): number => {
  if (spec.kind === 'eval') {
    const budgets = (spec.budgets as { toolCallBudgets?: unknown[] }).toolCallBudgets;
    return (spec.models as unknown[]).length * (budgets?.length ?? 1);
  }
  return spec.steps as number;
};

async function runPhase(
  options: DemoOptions,
  session: DemoSession,
  phase: Phase,
  spec: RunSpecJson,
  current: { runId: string | null },
): Promise<RunResource> {
  const { display } = options;
  const submitted = await submitRun(session.client, spec);
  current.runId = submitted.id;
  display.phaseStart(phase, submitted.id, STEPS_OF(spec));
  const onEvent = (event: RunEvent) => {
    if (event.type === 'step:committed') display.step(phase, event.step, event.metrics);
  };
  const run = await followRun(session.client, submitted.id, onEvent, options.signal);
  current.runId = null;
  await options.onRunSucceeded?.(phase, run, session);
  return run;
}

function phaseSummary(phase: Phase, sizes: DemoSizes, steps: number): string {
  switch (phase) {
    case 'sft':
      return `done, ${steps} steps of ${sizes.sft.batchSize} demonstrations`;
    case 'control':
      return `done, SFT continued ${steps} steps of ${sizes.sft.batchSize} demonstrations (fresh optimizer)`;
    case 'rm':
      return `done, ${steps} steps of ${sizes.rm.batchSize} preference pairs`;
    case 'grpo':
      return (
        `done, ${steps} steps of ${sizes.grpo.promptsPerStep} prompts x ${sizes.grpo.groupSize} rollouts` +
        `, max policy lag ${sizes.grpo.maxPolicyLag}`
      );
    case 'eval':
      return 'done';
  }
}

export async function runDemo(options: DemoOptions): Promise<DemoResult> {
  const started = performance.now();
  const { display } = options;
  const sizes = demoSizes(options);
  const demoId = `${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
  const workDir = path.join(path.dirname(options.reportPath), 'work', demoId);
  const current: { runId: string | null } = { runId: null };
  let redis: DemoRedis | null = null;
  const session: DemoSession = {
    client: new ApiClient({ url: 'http://127.0.0.1:0' }),
    stack: null,
  };
  let stackOptions: StackOptions | null = null;
  try {
    if (options.remote) {
      session.client = new ApiClient({ url: options.remote.url, token: options.remote.token });
      display.info(`anneal demo: using the control plane at ${options.remote.url}`);
    } else {
      redis = await ensureRedis(options.env);
      display.info(`anneal demo: Redis at ${redis.url} (${redis.source})`);
      stackOptions = {
        redisUrl: redis.url,
        keyPrefix: options.keyPrefix ?? `{anneal-demo-${demoId}}`,
        token: randomBytes(24).toString('base64url'),
        artifactDir: path.join(workDir, 'artifacts'),
        logFile: path.join(workDir, 'stack.log'),
        runSeriesGraceSeconds: options.runSeriesGraceSeconds ?? 60,
      };
      session.stack = await startStack(stackOptions);
      session.client = new ApiClient({ url: session.stack.url, token: stackOptions.token });
      display.info(
        `anneal demo: control plane ${session.stack.url}, worker /metrics ${session.stack.metricsUrl}` +
          ` (key prefix ${stackOptions.keyPrefix}, logs ${path.relative(process.cwd(), stackOptions.logFile)})`,
      );
    }
    const { seed } = options;
    const sft = await runPhase(options, session, 'sft', sftSpec(sizes, seed), current);
    display.phaseEnd('sft', phaseSummary('sft', sizes, sft.lastStep ?? 0));
    const rm = await runPhase(options, session, 'rm', rmSpec(sizes, seed, sft.id), current);
    display.phaseEnd('rm', phaseSummary('rm', sizes, rm.lastStep ?? 0));

    let rewardModel: string | undefined = options.remote?.rewardModel;
    if (session.stack && stackOptions) {
      // How an operator makes an rm run's model available to GRPO runs: register it by name in
      // the operator config (`rewardModels: {demo-rm: {type: run, run: <id>}}`) and restart.
      rewardModel = DEMO_REWARD_MODEL;
      display.info(
        `registering rm run ${rm.id} as reward model '${rewardModel}' (operator config ` +
          `rewardModels.${rewardModel}: {type: run, run: ${rm.id}}); restarting the stack`,
      );
      await session.stack.close();
      session.stack = null;
      session.stack = await startStack(stackOptions, [{ name: rewardModel, run: rm.id }]);
      session.client = new ApiClient({ url: session.stack.url, token: stackOptions.token });
    } else if (rewardModel === undefined) {
      display.info('no --reward-model given: GRPO runs with preference score s = 1');
    }
    const grpo = await runPhase(
      options,
      session,
      'grpo',
      grpoSpec(sizes, seed, sft.id, rewardModel),
      current,
    );
    display.phaseEnd('grpo', phaseSummary('grpo', sizes, grpo.lastStep ?? 0));
    const control = await runPhase(
      options,
      session,
      'control',
      controlSpec(sizes, seed, sft.id),
      current,
    );
    display.phaseEnd('control', phaseSummary('control', sizes, control.lastStep ?? 0));
    const evaluation = await runPhase(
      options,
      session,
      'eval',
      evalSpec(sizes, seed, { sft: sft.id, control: control.id, grpo: grpo.id }, rewardModel),
      current,
    );
    display.phaseEnd('eval', phaseSummary('eval', sizes, evaluation.lastStep ?? 0));

    const [sftSteps, rmSteps, grpoSteps, evalSteps] = await Promise.all(
      [sft, rm, grpo, evaluation].map((run) => readSteps(session.client, run.id)),
    );
    const report = buildReport({
      wallSeconds: (performance.now() - started) / 1000,
      runs: { sft: sft.id, rm: rm.id, control: control.id, grpo: grpo.id, eval: evaluation.id },
      sft: sftSteps!,
      rm: rmSteps!,
      grpo: grpoSteps!,
      eval: evalSteps!,
      evalItems: await readItems(session.client, evaluation.id),
      maxPolicyLag: sizes.grpo.maxPolicyLag,
      evalBudget: sizes.eval.maxToolCalls,
      guardrails: {
        sft: sft.guardrails,
        rm: rm.guardrails,
        control: control.guardrails,
        grpo: grpo.guardrails,
      },
    });
    await mkdir(path.dirname(options.reportPath), { recursive: true });
    const chartPath = path.join(path.dirname(options.reportPath), 'eval-curve.svg');
    await writeFile(chartPath, await readChart(session.client, evaluation.id));
    report.eval.chart = path.basename(chartPath);
    const targets = checkTargets(report, grpoSteps!);
    await mkdir(path.dirname(options.reportPath), { recursive: true });
    await writeFile(options.reportPath, `${JSON.stringify(report, null, 2)}\n`);
    display.stop();
    printSummary(display, { report, targets, reportPath: options.reportPath, sizes });
    return { report, targets, reportPath: options.reportPath };
  } catch (error) {
    if (current.runId !== null && options.signal?.aborted) {
      await cancelRun(session.client, current.runId, 'anneal demo interrupted').catch(() => {});
    }
    throw error;
  } finally {
    display.stop();
    await session.stack?.close().catch(() => {});
    await redis?.stop();
    await rm(path.join(workDir, 'artifacts'), { recursive: true, force: true });
  }
}
