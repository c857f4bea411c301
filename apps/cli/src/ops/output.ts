// Output helpers of the operator commands (pools, workers, runs watch): aligned tables, ages,
// and errors as `error: <code>: <detail>` (exit 1; usage errors exit 2 through commander).
import { ApiError, type ApiClient, clientFromEnv } from '../api/client.ts';
import { safeJson, terminalSafe, writeErr, writeOut } from './terminal-text.ts';

/** Left-aligned columns separated by two spaces; trailing blanks trimmed. */
export function table(unsafeRows: readonly (readonly string[])[]): string {
  // Cells hold server text (names, labels, reasons): escaped before they are measured.
  const rows = unsafeRows.map((r) => r.map(terminalSafe));
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** 0s, 42s, 3m05s, 2h07m, 3d04h: a human age; `-` for null. */
export function formatAge(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return '-';
  const s = Math.max(0, Math.floor(seconds));
  const two = (n: number) => String(n).padStart(2, '0');
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${two(s % 60)}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h${two(Math.floor((s % 3600) / 60))}m`;
  return `${Math.floor(s / 86_400)}d${two(Math.floor((s % 86_400) / 3600))}h`;
}

/** Seconds from an ISO time to `now`. */
export function ageOf(iso: string, now: Date = new Date()): number {
  return (now.getTime() - Date.parse(iso)) / 1000;
}

/**
 * `error: <code>: <detail>` (the title when there is no detail), then one indented line per
 * field issue. Anything else: `error: <message>`.
 */
export function formatError(error: unknown): string {
  if (error instanceof ApiError) {
    const { problem } = error;
    const lines = [`error: ${problem.code}: ${problem.detail ?? problem.title}`];
    for (const issue of problem.errors ?? []) {
      const line = issue.line === undefined ? '' : ` (line ${issue.line})`;
      lines.push(`  ${issue.path || '(document)'}${line}: ${issue.message}`);
    }
    return lines.map(terminalSafe).join('\n');
  }
  return terminalSafe(`error: ${(error as Error).message}`);
}

/** Runs a REST command against ANNEAL_URL / ANNEAL_TOKEN; any error is printed, exit code 1. */
export async function withApi(action: (client: ApiClient) => Promise<void>): Promise<void> {
  try {
    await action(clientFromEnv(process.env));
  } catch (error) {
    writeErr(`${formatError(error)}\n`);
    process.exitCode = 1;
  }
}

export function printJson(value: unknown): void {
  writeOut(`${safeJson(value, 2)}\n`);
}
