// `anneal runs compare` and `anneal sweeps get` as text: runs lettered A, B, C… with a legend
// line each, the spec fields that differ between them (one row per field), then each run's
// final metrics (one row per metric, the metrics `only` names or every one recorded).
import type { RunComparison, SweepResource } from '@anneal/protocol';
import { table } from '../ops/output.ts';

/** A, B, …, Z, AA, AB, …: a short column name per run. */
export function letter(i: number): string {
  const base = String.fromCharCode(65 + (i % 26));
  return i < 26 ? base : `${letter(Math.floor(i / 26) - 1)}${base}`;
}

/** A field or metric value: numbers as they are, anything else as JSON, `-` for none. */
export function cellText(value: unknown): string {
  if (value === undefined || value === null) return '-';
  if (typeof value === 'number')
    return Number.isInteger(value) ? String(value) : String(+value.toPrecision(6));
  return typeof value === 'string' ? value : JSON.stringify(value);
}

export function comparisonText(c: RunComparison, only: readonly string[] = []): string {
  const columns = c.runs.map((_, i) => letter(i));
  const legend = c.runs.map(
    (run, i) =>
      `${columns[i]} = ${run.id}${run.name ? ` (${run.name})` : ''}: ${run.state}` +
      (run.final ? `, step ${run.final.step}` : ', no step yet'),
  );
  const fields =
    c.fields.length === 0
      ? ['(the specs are the same)']
      : [
          table([
            ['field', ...columns],
            ...c.fields.map((f) => [f, ...c.runs.map((r) => cellText(r.differences[f]))]),
          ]),
        ];
  const recorded = [...new Set(c.runs.flatMap((r) => Object.keys(r.final?.metrics ?? {})))].sort();
  const metrics = only.length > 0 ? only : recorded;
  const finals =
    metrics.length === 0
      ? ['(no step committed yet)']
      : [
          table([
            ['final metric', ...columns],
            ...metrics.map((m) => [m, ...c.runs.map((r) => cellText(r.final?.metrics[m]))]),
          ]),
        ];
  return `${[`${c.runs.length} ${c.kind} runs`, ...legend, '', ...fields, '', ...finals].join('\n')}\n`;
}

/** `anneal sweeps get`: the sweep, its runs in each state, and each run's grid values and
 * state, the best one marked. */
export function sweepText(s: SweepResource): string {
  const paths = Object.keys(s.grid);
  const counts = Object.entries(s.counts)
    .filter(([, n]) => n > 0)
    .map(([state, n]) => `${n} ${state}`)
    .join(', ');
  const metric = s.select ? [`${s.select.metric} (${s.select.mode})`] : [];
  const rows = s.runs.map((run) => [
    run.id === s.best?.runId ? `${run.id} *` : run.id,
    run.state,
    run.lastStep === undefined ? '-' : String(run.lastStep),
    ...paths.map((p) => cellText(run.values[p])),
    ...(s.select ? [cellText(run.metric)] : []),
  ]);
  const lines = [
    `${s.id}${s.name ? ` (${s.name})` : ''}: ${s.runs.length} ${s.kind} runs, ${counts || 'none yet'}${s.done ? ', done' : ''}`,
    ...(s.budget ? [`budget $${s.budget.maxUsd}, $${cellText(s.budget.perRunUsd)} per run`] : []),
    table([['RUN', 'STATE', 'STEP', ...paths, ...metric], ...rows]),
  ];
  if (s.best)
    lines.push(`best (*): ${s.best.runId}, ${s.select?.metric} = ${cellText(s.best.value)}`);
  return `${lines.join('\n')}\n`;
}
