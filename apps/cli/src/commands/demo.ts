// `anneal demo` (= `npm run demo`): the whole recipe on this machine through the REST API —
// SFT -> reward model -> GRPO -> eval — with live progress, a summary and
// .anneal/demo/report.json. Exit 0 when every run succeeded (targets are reported, not
// enforced), 1 when a run failed (with its reason), 130 on Ctrl-C after a clean shutdown.
import path from 'node:path';
import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { formatApiError } from '../api/client.ts';
import { DemoRunError } from '../demo/api.ts';
import { MAX_POLICY_LAG } from '../demo/specs.ts';
import { writeErr } from '../ops/terminal-text.ts';

interface DemoFlags {
  quick?: boolean;
  stepsScale: number;
  seed: number;
  maxPolicyLag: number;
  report: string;
  url?: string;
  token?: string;
  rewardModel?: string;
}

function positiveNumber(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a number > 0.');
  return n;
}

function seedValue(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) > 2 ** 31 - 1) {
    throw new InvalidArgumentError('must be an integer 0..2147483647.');
  }
  return Number(value);
}

function policyLagValue(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) > MAX_POLICY_LAG) {
    throw new InvalidArgumentError(`must be an integer 0..${MAX_POLICY_LAG}.`);
  }
  return Number(value);
}

async function demo(flags: DemoFlags): Promise<void> {
  const token = flags.token ?? process.env.ANNEAL_TOKEN;
  if (flags.url !== undefined && !token) {
    writeErr('anneal demo: --url needs --token (or ANNEAL_TOKEN)\n');
    process.exitCode = 2;
    return;
  }
  const controller = new AbortController();
  let interrupts = 0;
  const onSignal = () => {
    interrupts += 1;
    if (interrupts > 1) process.exit(130);
    writeErr('\nanneal demo: stopping (cancelling the current run, shutting down)…\n');
    controller.abort(new Error('interrupted'));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // Loaded on use: the local stack (control plane, worker, engines) and the progress display
  // are heavy, and `anneal --help` must not pay for them.
  const [{ createDisplay }, { runDemo }] = await Promise.all([
    import('../demo/display.ts'),
    import('../demo/run-demo.ts'),
  ]);
  const display = createDisplay(process.stdout);
  try {
    await runDemo({
      seed: flags.seed,
      stepsScale: flags.stepsScale,
      maxPolicyLag: flags.maxPolicyLag,
      quick: flags.quick === true,
      reportPath: path.resolve(flags.report),
      env: process.env,
      display,
      signal: controller.signal,
      ...(flags.url !== undefined && {
        remote: {
          url: flags.url,
          token: token!,
          ...(flags.rewardModel !== undefined && { rewardModel: flags.rewardModel }),
        },
      }),
    });
  } catch (error) {
    display.stop();
    if (controller.signal.aborted) {
      writeErr('anneal demo: interrupted\n');
      process.exitCode = 130;
    } else if (error instanceof DemoRunError) {
      writeErr(`anneal demo: ${error.message}\n`);
      process.exitCode = 1;
    } else {
      writeErr(`anneal demo: ${formatApiError(error).replace(/^error: /, '')}\n`);
      process.exitCode = 1;
    }
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

export function register(program: Command): void {
  program
    .command('demo')
    .description(
      'Run the whole recipe locally through the REST API: SFT -> reward model -> GRPO -> eval ' +
        '(embedded engines; writes .anneal/demo/report.json)',
    )
    .option('--quick', 'the short loop CI runs (few steps, small batches)')
    .option('--steps-scale <x>', 'multiply the step counts of sft, rm and grpo', positiveNumber, 1)
    .option('--seed <n>', 'seed of every run', seedValue, 0)
    .option(
      '--max-policy-lag <k>',
      `rollout.maxPolicyLag of the GRPO run, 0..${MAX_POLICY_LAG} (0: on-policy; k: the next k ` +
        'steps are sampled while a step trains, docs/recipe.md "Pipelined GRPO")',
      policyLagValue,
      0,
    )
    .option('--report <file>', 'where to write the report', '.anneal/demo/report.json')
    .option('--url <url>', 'use this control plane (e.g. docker compose) instead of a local stack')
    .option('--token <token>', 'API token for --url (default: ANNEAL_TOKEN)')
    .option(
      '--reward-model <name>',
      'with --url: a reward model registered in that operator config (default: none, s = 1)',
    )
    .action((flags: DemoFlags) => demo(flags));
}
