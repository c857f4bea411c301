// What `anneal runs watch` prints: a per-step table (one row per committed step), state and
// checkpoint lines, and on a terminal a progress bar kept on the last line (redrawn in place).
// Without a terminal the same rows and lines are printed plainly, with no control codes.
import type { RunKind, RunState, WireStepMetrics } from '@anneal/protocol';
import { formatAge } from '../ops/output.ts';
import { terminalSafe } from '../ops/terminal-text.ts';

/** Step-record metrics shown by default per run kind (apps/worker/src/executors/metrics.ts). */
export const DEFAULT_COLUMNS: Readonly<Record<RunKind, readonly string[]>> = {
  sft: ['loss', 'grad_norm', 'tokens_per_second', 'step_seconds'],
  rm: ['loss', 'pair_accuracy', 'heldout_pair_accuracy', 'step_seconds'],
  grpo: [
    'reward/all',
    'base_reward/all',
    'loss',
    'grad_norm',
    'train_inference_kl',
    'tool_calls_per_rollout',
    'response_tokens',
    'step_seconds',
  ],
  eval: ['accuracy', 'tool_calls_per_rollout', 'answered_fraction', 'examples'],
};

export interface Output {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

/** 4 significant digits; tiny or huge values in exponent form; `-` when not reported. */
export function formatValue(value: number | null | undefined): string {
  if (value === null || value === undefined) return '-';
  if (!Number.isFinite(value)) return String(value);
  if (Number.isInteger(value) && Math.abs(value) < 1e9) return String(value);
  const magnitude = Math.abs(value);
  if (magnitude !== 0 && (magnitude < 1e-3 || magnitude >= 1e6)) return value.toExponential(2);
  return String(Number(value.toPrecision(4)));
}

/** The columns to show: `wanted` (or the kind's defaults) that the first step reports. */
export function chooseColumns(
  kind: RunKind,
  first: WireStepMetrics,
  wanted?: readonly string[],
): string[] {
  if (wanted && wanted.length > 0) return [...wanted];
  const present = DEFAULT_COLUMNS[kind].filter((name) => name in first);
  return present.length > 0 ? present : Object.keys(first).sort().slice(0, 6);
}

export function progressBar(done: number, total: number, width: number): string {
  const ratio = total > 0 ? Math.min(1, Math.max(0, done / total)) : 0;
  const filled = Math.round(ratio * width);
  return `[${'█'.repeat(filled)}${'░'.repeat(width - filled)}]`;
}

export interface WatchHeader {
  runId: string;
  kind: RunKind;
  /** Total steps of the run (spec.steps), when the kind has a fixed count. */
  totalSteps?: number;
  state: RunState;
}

const CLEAR_LINE = '\r\x1b[2K';

export class WatchRenderer {
  private columns: string[] | null = null;
  private widths: number[] = [];
  private lastStep: number | undefined;
  private state: RunState;
  private firstAt: { step: number; ms: number } | undefined;
  private lastAt: { step: number; ms: number } | undefined;
  private statusShown = false;
  private readonly tty: boolean;

  constructor(
    private readonly header: WatchHeader,
    private readonly out: Output,
    private readonly wanted?: readonly string[],
  ) {
    this.tty = out.isTTY === true;
    this.state = header.state;
  }

  /** Printed once before anything else. */
  start(): void {
    const steps = this.header.totalSteps === undefined ? '' : `, ${this.header.totalSteps} steps`;
    this.line(`run ${this.header.runId} (${this.header.kind}${steps}): ${this.state}`);
  }

  step(step: number, metrics: WireStepMetrics, at: string): void {
    if (!this.columns) {
      this.columns = chooseColumns(this.header.kind, metrics, this.wanted);
      const names = ['STEP', ...this.columns];
      this.widths = names.map((n) => Math.max(n.length, 9));
      this.line(this.row(names));
    }
    const cells = [String(step), ...this.columns.map((c) => formatValue(metrics[c]))];
    // Progress first, so the status line drawn under this row already counts it.
    this.lastStep = step;
    const ms = Date.parse(at);
    if (Number.isFinite(ms)) {
      this.firstAt ??= { step, ms };
      this.lastAt = { step, ms };
    }
    this.line(this.row(cells));
  }

  /** `principal`: who asked (a cancel), shown apart from the reason, which is their own text. */
  stateChange(from: RunState | null, to: RunState, reason: string, principal?: string): void {
    this.state = to;
    const by = principal === undefined ? '' : ` by ${principal}`;
    this.line(`state: ${from ?? '-'} -> ${to}${by} (${reason})`);
    // The watch goes on through a pause: say what ends it.
    if (to === 'paused') {
      this.line(
        `paused: \`anneal runs resume ${this.header.runId}\` continues it from its checkpoint`,
      );
    }
  }

  checkpoint(step: number, path: string): void {
    this.line(`checkpoint: step ${step} saved to ${path}`);
  }

  /** A message about the connection (drops, reconnects): on stderr in plain mode. */
  notice(text: string, err: Output): void {
    if (this.tty) this.line(text);
    else err.write(`${terminalSafe(text)}\n`);
  }

  /** Removes the status line (before exit), leaving a final summary line. */
  finish(summary: string): void {
    if (this.statusShown) this.out.write(CLEAR_LINE);
    this.statusShown = false;
    this.out.write(`${terminalSafe(summary)}\n`);
  }

  /** The progress line: bar, steps, state, elapsed time between steps and an estimate. */
  status(): string {
    const done = this.lastStep ?? 0;
    const total = this.header.totalSteps;
    const parts: string[] = [];
    const width = Math.max(10, Math.min(30, this.terminalWidth() - 60));
    if (total !== undefined) parts.push(progressBar(done, total, width), `${done}/${total} steps`);
    else parts.push(`step ${done}`);
    parts.push(this.state);
    if (this.firstAt && this.lastAt && this.lastAt.step > this.firstAt.step) {
      const perStep =
        (this.lastAt.ms - this.firstAt.ms) / 1000 / (this.lastAt.step - this.firstAt.step);
      parts.push(`${formatValue(Number(perStep.toFixed(2)))} s/step`);
      if (total !== undefined && total > done)
        parts.push(`eta ${formatAge(perStep * (total - done))}`);
    }
    // Never wider than the terminal: a wrapped status line could not be redrawn in place.
    return parts.join('  ').slice(0, Math.max(20, this.terminalWidth() - 1));
  }

  /** Columns of the terminal; 80 when unknown (some ptys report 0). */
  private terminalWidth(): number {
    return this.out.columns || 80;
  }

  private row(cells: readonly string[]): string {
    return cells
      .map((cell, i) => cell.padStart(this.widths[i] ?? cell.length))
      .join(' ')
      .trimEnd();
  }

  /** Every line printed: reasons, paths and notices are the server's text, escaped here (the
   * status line's own control codes are added after). */
  private line(unsafe: string): void {
    const text = terminalSafe(unsafe);
    if (!this.tty) {
      this.out.write(`${text}\n`);
      return;
    }
    // Print above the status line, then redraw it.
    this.out.write(`${this.statusShown ? CLEAR_LINE : ''}${text}\n${this.status()}`);
    this.statusShown = true;
  }
}
