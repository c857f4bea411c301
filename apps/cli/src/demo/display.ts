// What the demo prints while it runs. On a terminal: one progress bar per phase (cli-progress)
// and, for GRPO, a per-step table printed above the bars. Otherwise (CI logs, a pipe): one plain
// line per committed step and no control codes.
import cliProgress, { type MultiBar, type SingleBar } from 'cli-progress';
import type { WireStepMetrics } from '@anneal/protocol';
import { formatValue } from '../watch/render.ts';

export type Phase = 'sft' | 'rm' | 'control' | 'grpo' | 'eval';

export interface DemoDisplay {
  /** A narration line (what happens next, where to look). */
  info(line: string): void;
  phaseStart(phase: Phase, runId: string, totalSteps: number): void;
  step(phase: Phase, step: number, metrics: WireStepMetrics): void;
  phaseEnd(phase: Phase, summary: string): void;
  /** Stops redrawing (idempotent); later output is plain. */
  stop(): void;
}

/** GRPO table columns: header (the recipe's symbol where it has one: docs/recipe.md "Glossary"),
 * step-record metric. */
export const GRPO_COLUMNS: ReadonlyArray<readonly [string, string]> = [
  ['R', 'reward/all'],
  ['r_base', 'base_reward/all'],
  ['s', 'preference_score'],
  ['tools', 'tool_calls_per_rollout'],
  ['length', 'response_tokens'],
  ['KL', 'train_inference_kl'],
  ['grad', 'grad_norm'],
];

/** The headline metric of a step per phase, for bars and plain lines. */
const PHASE_METRICS: Readonly<Record<Phase, ReadonlyArray<readonly [string, string]>>> = {
  sft: [
    ['loss', 'loss'],
    ['grad', 'grad_norm'],
  ],
  control: [
    ['loss', 'loss'],
    ['grad', 'grad_norm'],
  ],
  rm: [
    ['loss', 'loss'],
    ['pair acc', 'pair_accuracy'],
    ['held-out acc', 'heldout_pair_accuracy'],
  ],
  grpo: GRPO_COLUMNS,
  eval: [
    ['accuracy', 'accuracy'],
    ['tool calls', 'tool_calls_per_rollout'],
    ['tool-free calls', 'tool_calls_per_rollout/tool_free'],
  ],
};

const WIDTH = 9;
const cell = (text: string) => text.padStart(WIDTH);

export function grpoHeader(): string {
  return `${'step'.padStart(5)} ${GRPO_COLUMNS.map(([h]) => cell(h)).join(' ')}`;
}

export function grpoRow(step: number, metrics: WireStepMetrics): string {
  const values = GRPO_COLUMNS.map(([, key]) => cell(formatValue(metrics[key])));
  return `${String(step).padStart(5)} ${values.join(' ')}`;
}

/** `loss 1.234  grad 0.5` — the phase's metrics this step reports. */
export function stepDetail(phase: Phase, metrics: WireStepMetrics): string {
  return PHASE_METRICS[phase]
    .filter(([, key]) => metrics[key] !== undefined)
    .map(([label, key]) => `${label} ${formatValue(metrics[key])}`)
    .join('  ');
}

interface Writable {
  write(text: string): unknown;
}

export class PlainDisplay implements DemoDisplay {
  private readonly totals = new Map<Phase, number>();
  constructor(private readonly out: Writable) {}

  info(line: string): void {
    this.out.write(`${line}\n`);
  }

  phaseStart(phase: Phase, runId: string, totalSteps: number): void {
    this.totals.set(phase, totalSteps);
    this.out.write(`${phase}: run ${runId}, ${totalSteps} steps\n`);
    if (phase === 'grpo') this.out.write(`${grpoHeader()}\n`);
  }

  step(phase: Phase, step: number, metrics: WireStepMetrics): void {
    if (phase === 'grpo') {
      this.out.write(`${grpoRow(step, metrics)}\n`);
      return;
    }
    const total = this.totals.get(phase) ?? step;
    this.out.write(`${phase} step ${step}/${total}  ${stepDetail(phase, metrics)}\n`);
  }

  phaseEnd(phase: Phase, summary: string): void {
    this.out.write(`${phase}: ${summary}\n`);
  }

  stop(): void {}
}

export class TerminalDisplay implements DemoDisplay {
  private readonly bars: MultiBar;
  private readonly active = new Map<Phase, SingleBar>();
  private stopped = false;

  constructor(private readonly out: NodeJS.WriteStream) {
    this.bars = new cliProgress.MultiBar({
      stream: out,
      format: ' {phase} {bar} {value}/{total} steps | {duration_formatted} | {detail}',
      barsize: 24,
      barCompleteChar: '█',
      barIncompleteChar: '░',
      hideCursor: true,
      fps: 5,
      autopadding: true,
    });
  }

  info(line: string): void {
    if (this.stopped) this.out.write(`${line}\n`);
    else this.bars.log(`${line}\n`);
  }

  phaseStart(phase: Phase, runId: string, totalSteps: number): void {
    this.info(`${phase}: run ${runId}, ${totalSteps} steps`);
    if (phase === 'grpo') this.info(grpoHeader());
    const bar = this.bars.create(totalSteps, 0, { phase: phase.padEnd(4), detail: '' });
    this.active.set(phase, bar);
  }

  step(phase: Phase, step: number, metrics: WireStepMetrics): void {
    // GRPO's numbers are in the table row; its bar shows only the reward.
    const detail =
      phase === 'grpo'
        ? `reward ${formatValue(metrics['reward/all'])}`
        : stepDetail(phase, metrics);
    if (phase === 'grpo') this.info(grpoRow(step, metrics));
    this.active.get(phase)?.update(step, { detail });
  }

  phaseEnd(phase: Phase, summary: string): void {
    this.info(`${phase}: ${summary}`);
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.bars.stop();
  }
}

export function createDisplay(out: NodeJS.WriteStream): DemoDisplay {
  return out.isTTY ? new TerminalDisplay(out) : new PlainDisplay(out);
}
