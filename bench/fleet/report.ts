// Formatting of the fleet bench's report.
import type { CommandCount } from './monitor.ts';
import type { Burst } from './phases.ts';
import type { RedisLoad } from './redis.ts';

export const ms = (value: number): string =>
  Number.isFinite(value)
    ? value >= 1000
      ? `${(value / 1000).toFixed(2)} s`
      : `${value.toFixed(0)} ms`
    : 'n/a';

export const verdict = (ok: boolean): string => (ok ? 'OK' : 'FAILED');

export interface LoadRow {
  name: string;
  workers: number;
  load: RedisLoad;
  /** Runs (jobs) in the window, for per-run figures. */
  runs?: number;
}

const HEAD = [
  'Redis load',
  'window',
  'cmds/s',
  '/worker',
  'scripts/s',
  'CPU',
  'cmds/run',
  'scripts/run',
  'CPU/run',
];
const WIDTHS = [24, 8, 9, 9, 10, 7, 9, 12, 9];

const row = (cells: string[]) =>
  cells.map((c, i) => (i === 0 ? c.padEnd(WIDTHS[i] ?? 9) : c.padStart(WIDTHS[i] ?? 9))).join('');

export function formatLoad(rows: readonly LoadRow[]): string[] {
  const out = [row(HEAD)];
  for (const { name, workers, load, runs } of rows) {
    const perSecond = load.commands / load.seconds;
    out.push(
      row([
        name,
        `${load.seconds.toFixed(1)} s`,
        perSecond.toFixed(0),
        (perSecond / workers).toFixed(1),
        (load.scripts / load.seconds).toFixed(0),
        `${((100 * load.cpuSeconds) / load.seconds).toFixed(0)}%`,
        runs ? (load.commands / runs).toFixed(1) : '',
        runs ? (load.scripts / runs).toFixed(1) : '',
        runs ? `${((1000 * load.cpuSeconds) / runs).toFixed(2)} ms` : '',
      ]),
    );
  }
  return out;
}

/** The most frequent commands, per run: `evalsha 6.0, hget 2.0, …`. */
export function topCommands(byCommand: Record<string, number>, runs: number, count = 8): string {
  return Object.entries(byCommand)
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, calls]) => `${name} ${(calls / runs).toFixed(1)}`)
    .join(', ');
}

/** CPU milliseconds per run of each process group during a burst, and their sum. */
export function cpuLine(name: string, burst: Burst): string {
  const perRun = (v: number) => (v / burst.runs).toFixed(2);
  const redisMs = (1000 * burst.load.cpuSeconds) / burst.runs;
  const { bench, controlPlane, workers } = burst.cpu;
  const total = (bench + controlPlane + workers) / burst.runs + redisMs;
  return (
    `CPU ms per run, ${name}: submitter ${perRun(bench)}, control plane ${perRun(controlPlane)}, ` +
    `workers ${perRun(workers)}, Redis ${redisMs.toFixed(2)} = ${total.toFixed(2)}`
  );
}

/** Redis commands per run counted under MONITOR. */
export function countLine(name: string, c: CommandCount, runs: number): string {
  const per = (v: number) => (v / runs).toFixed(1);
  return (
    `${name} (MONITOR, ${runs} runs): ${per(c.sent)} commands sent, of which ${per(c.scripts)} ` +
    `Lua scripts running ${per(c.inScripts)} commands; sent: ${topCommands(c.byCommand, runs)}`
  );
}
