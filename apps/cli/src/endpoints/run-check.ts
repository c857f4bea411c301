// `anneal endpoints check`'s work (commands/endpoints.ts registers it): parse the operator config,
// probe every endpoint (endpoints/check.ts), print the findings. Loaded when the command runs:
// the config's schemas, YAML parser and the engines are not part of every command's start.
import { readFile } from 'node:fs/promises';
import { formatIssues, parseOperatorConfig } from '@anneal/protocol';
import { type CheckRow, checkEndpoints, checkExitCode, probeTinkerServer } from './check.ts';
import { printJson, table } from '../ops/output.ts';
import { writeErr, writeOut } from '../ops/terminal-text.ts';

const MARK: Record<CheckRow['status'], string> = { ok: 'ok', warn: 'WARN', fail: 'FAIL' };

function formatCheckTable(rows: readonly CheckRow[]): string {
  return table([
    ['ENDPOINT', 'TARGET', 'CHECK', 'RESULT', 'DETAIL'],
    ...rows.map((r) => [r.endpoint, r.target, r.check, MARK[r.status], r.detail]),
  ]);
}

export async function runCheck(flags: { config?: string; json?: boolean }): Promise<void> {
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
