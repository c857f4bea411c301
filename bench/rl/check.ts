// Cross-check: the baseline and @anneal/rl must agree before their times mean anything.
import type { StepMetrics } from '@anneal/rl';
import type { BaselineResult } from './baseline.ts';
import type { StepBuffers } from './optimised.ts';

function close(a: number, b: number, relative: number): boolean {
  return Math.abs(a - b) <= relative * Math.max(1e-12, Math.abs(a), Math.abs(b));
}

/** Problems found (empty when both implementations agree). */
export function crossCheck(
  flat: StepMetrics,
  buffers: StepBuffers,
  baseline: BaselineResult,
): string[] {
  const problems: string[] = [];
  for (const key of Object.keys(flat) as Array<keyof StepMetrics>) {
    // sums over 2M tokens in different orders: agree to ~1e-9 relative; k3 is a small difference
    const tolerance = key === 'k3' ? 1e-6 : 1e-9;
    if (!close(flat[key], baseline.metrics[key], tolerance)) {
      problems.push(`${key}: ${flat[key]} vs baseline ${baseline.metrics[key]}`);
    }
  }
  baseline.advantages.forEach((a, i) => {
    if (!close(buffers.advantages[i]!, a, 1e-12))
      problems.push(`advantages[${i}]: ${buffers.advantages[i]} vs ${a}`);
  });
  let token = 0;
  for (const row of baseline.tokenAdvantages) {
    for (const value of row) {
      if (buffers.tokenAdvantages[token] !== Math.fround(value))
        problems.push(`tokenAdvantages[${token}] differs`);
      token++;
    }
  }
  return problems.slice(0, 10);
}
