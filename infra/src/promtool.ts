// Runs promtool (Debian's `prometheus` package; PROMTOOL_BIN overrides the path).
import { spawnSync } from 'node:child_process';

export interface PromtoolResult {
  ok: boolean;
  output: string;
}

export function promtoolPath(): string {
  return process.env['PROMTOOL_BIN'] ?? 'promtool';
}

/** Fails loudly when promtool is missing: CI installs it, so a missing binary is a setup error. */
export function assertPromtool(): string {
  const bin = promtoolPath();
  const probe = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    throw new Error(
      `promtool not found at "${bin}": install it (apt-get install prometheus, which ships ` +
        'promtool) or set PROMTOOL_BIN. These checks are not optional.',
    );
  }
  return `${probe.stdout}${probe.stderr}`.split('\n')[0] ?? '';
}

export function promtool(args: readonly string[], cwd?: string): PromtoolResult {
  const run = spawnSync(promtoolPath(), args, { encoding: 'utf8', cwd, timeout: 60_000 });
  if (run.error) throw run.error;
  return { ok: run.status === 0, output: `${run.stdout}${run.stderr}` };
}
