// `anneal endpoints check [--config ops.yaml]`: probes every endpoint of the operator config
// (read-only) and prints one row per finding; exit 1 when any finding would break a run
// (endpoints/check.ts). Secrets (apiKeyEnv) come from this process's environment.
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { formatIssues, parseOperatorConfig } from '@anneal/protocol';
import {
  type CheckRow,
  checkEndpoints,
  checkExitCode,
  probeTinkerServer,
} from '../endpoints/check.ts';
import { printJson, table } from '../ops/output.ts';
import { writeErr, writeOut } from '../ops/terminal-text.ts';

const MARK: Record<CheckRow['status'], string> = { ok: 'ok', warn: 'WARN', fail: 'FAIL' };

export function formatCheckTable(rows: readonly CheckRow[]): string {
  return table([
    ['ENDPOINT', 'TARGET', 'CHECK', 'RESULT', 'DETAIL'],
    ...rows.map((r) => [r.endpoint, r.target, r.check, MARK[r.status], r.detail]),
  ]);
}

async function runCheck(flags: { config?: string; json?: boolean }): Promise<void> {
  const path = flags.config ?? process.env.ANNEAL_CONFIG;
  if (path === undefined) {
    writeErr('anneal endpoints check: pass --config <file> or set ANNEAL_CONFIG\n');
    process.exit(2);
  }
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    writeErr(`anneal endpoints check: cannot read ${path}: ${(error as Error).message}\n`);
    process.exit(2);
  }
  const parsed = parseOperatorConfig(text);
  if (!parsed.ok) {
    writeErr(`anneal endpoints check: ${path}:\n${formatIssues(parsed.errors)}\n`);
    process.exit(2);
  }
  // Loaded on use: other commands do not pay for the engines at start-up.
  const engines = await import('@anneal/engines');
  const rows = await checkEndpoints(parsed.value, process.env, {
    probeVllmEndpoint: engines.probeVllmEndpoint,
    probeLogprobsMode: engines.probeLogprobsMode,
    logprobsModeMismatch: engines.logprobsModeMismatch,
    probeTinkerServer,
  });
  if (flags.json) printJson({ rows });
  else writeOut(`${formatCheckTable(rows)}\n`);
  const failed = rows.filter((r) => r.status === 'fail').length;
  if (!flags.json) {
    writeErr(
      failed === 0
        ? `all ${rows.length} checks passed${rows.some((r) => r.status === 'warn') ? ' (with warnings)' : ''}\n`
        : `${failed} of ${rows.length} checks failed\n`,
    );
  }
  process.exitCode = checkExitCode(rows);
}

export function register(program: Command): void {
  const endpoints = program.command('endpoints').description('Operator checks of engine endpoints');
  endpoints
    .command('check')
    .description(
      'Probe every endpoint of the operator config: reachability, version, served model and context window, LoRA and load_inplace, logprobs mode, adapter storage, trainer backend; exit 1 on any failure',
    )
    .option('--config <file>', 'operator config YAML (default: ANNEAL_CONFIG)')
    .option('--json', 'print the findings as JSON')
    .action((flags: { config?: string; json?: boolean }) => runCheck(flags));
}
