// Usage as the CLI prints it (docs/usage.md): the one-line summary of `anneal runs get|watch`
// and the estimate of `anneal submit --dry-run`.
import type { RunEstimate, RunUsage, Usage, UsageCost } from '@anneal/protocol';
import { formatAge } from './output.ts';

/** 950, 12.3k, 4.56M: a count at a glance. */
export function formatCount(n: number): string {
  const magnitude = Math.abs(n);
  if (magnitude < 1000) return String(Math.round(n));
  if (magnitude < 1e6) return `${Number((n / 1e3).toPrecision(3))}k`;
  if (magnitude < 1e9) return `${Number((n / 1e6).toPrecision(3))}M`;
  return `${Number((n / 1e9).toPrecision(3))}G`;
}

/** $12.34, $0.0123: cents for dollars and up, four decimals below. */
export function formatUsd(usd: number): string {
  return `$${usd.toFixed(Math.abs(usd) >= 1 || usd === 0 ? 2 : 4)}`;
}

/** `12.3k prompt · 4.5k completion · 20k trained tokens · 3 tool calls · 2m05s slot`, with
 * `· 16 judge calls · 9.2k scored tokens` before the slot time when the run spent any. */
export function formatQuantities(usage: Usage): string {
  return [
    `${formatCount(usage.promptTokens)} prompt`,
    `${formatCount(usage.completionTokens)} completion`,
    `${formatCount(usage.trainedTokens)} trained tokens`,
    `${formatCount(usage.toolCalls)} tool calls`,
    ...(usage.judgeCalls > 0 ? [`${formatCount(usage.judgeCalls)} judge calls`] : []),
    ...(usage.scoredTokens > 0 ? [`${formatCount(usage.scoredTokens)} scored tokens`] : []),
    `${formatAge(usage.slotSeconds)} slot`,
  ].join(' · ');
}

const priced = (usage: Usage, cost: UsageCost) =>
  `${formatQuantities(usage)} = ${formatUsd(cost.total)}`;

/** `usage: … = $0.0123 (budget $1.00: $0.9877 left)`. */
export function usageLine(usage: RunUsage): string {
  const { budget } = usage;
  const left = budget
    ? budget.reached
      ? ` (budget ${formatUsd(budget.maxUsd)} reached)`
      : ` (budget ${formatUsd(budget.maxUsd)}: ${formatUsd(budget.remainingUsd)} left)`
    : '';
  return `usage: ${priced(usage.usage, usage.costUsd)}${left}`;
}

/** The lines of `anneal submit --dry-run`. */
export function estimateLines(estimate: RunEstimate): string[] {
  const lines = [
    `estimate: ${estimate.kind}, ${estimate.steps} step(s); a ceiling from the spec's bounds at the operator's prices`,
  ];
  const label = (i: number) =>
    estimate.kind === 'eval' ? `  cell ${i + 1} (each checkpoint):` : '  per step:';
  estimate.perStep.forEach((s, i) => lines.push(`${label(i)} ${priced(s.usage, s.costUsd)}`));
  lines.push(`  total: ${priced(estimate.total.usage, estimate.total.costUsd)}`);
  if (estimate.budget) {
    lines.push(
      estimate.budget.fits
        ? `  budget.maxUsd ${formatUsd(estimate.budget.maxUsd)}: the ceiling fits`
        : `  budget.maxUsd ${formatUsd(estimate.budget.maxUsd)}: the ceiling is over it; the run pauses when it reaches it`,
    );
  }
  for (const missing of estimate.notEstimated) lines.push(`  not estimated: ${missing}`);
  return lines;
}
