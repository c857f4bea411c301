// `anneal endpoints check [--config ops.yaml]`: probes every endpoint of the operator config
// (read-only) and prints one row per finding; exit 1 when any finding would break a run
// (endpoints/check.ts). Secrets (apiKeyEnv) come from this process's environment. The check
// itself (endpoints/run-check.ts) is loaded when it runs.
import type { Command } from 'commander';

export function register(program: Command): void {
  const endpoints = program.command('endpoints').description('Operator checks of engine endpoints');
  endpoints
    .command('check')
    .description(
      'Probe every endpoint of the operator config: reachability, version, served model and context window, LoRA and load_inplace, logprobs mode, adapter storage, trainer backend; exit 1 on any failure',
    )
    .option('--config <file>', 'operator config YAML (default: ANNEAL_CONFIG)')
    .option('--json', 'print the findings as JSON')
    .action(async (flags: { config?: string; json?: boolean }) =>
      (await import('../endpoints/run-check.ts')).runCheck(flags),
    );
}
