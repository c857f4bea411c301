// Cross-checks: every implementation must agree with the baseline before its time means anything.
// The scalar path (float64) must match to summation-order noise; the WebAssembly path (float32 on
// float32 inputs) within @anneal/rl's documented bounds (wasmStepErrorBounds) plus that noise.
// Advantages must match to 1e-12 relative, per-token advantages bit for bit (in float32).
import { wasmStepErrorBounds, type StepTokenStats } from '@anneal/rl';
import type { BaselineResult } from './baseline.ts';
import type { StepArrays } from './optimised.ts';

export type Precision = 'float64' | 'float32-kernel';

/** sums over 2M tokens in different orders agree to ~1e-9 relative; k3 is a small difference */
const orderNoise = (key: keyof StepTokenStats) => (key === 'k3' ? 1e-6 : 1e-9);

/** Problems found (empty when the implementation agrees with the baseline). */
export function crossCheck(
  flat: StepTokenStats,
  arrays: StepArrays,
  baseline: BaselineResult,
  precision: Precision,
): string[] {
  const problems: string[] = [];
  const bounds =
    precision === 'float32-kernel' ? wasmStepErrorBounds(arrays, baseline.metrics) : null;
  for (const key of Object.keys(flat) as Array<keyof StepTokenStats>) {
    const [a, b] = [flat[key], baseline.metrics[key]];
    const allowed =
      (bounds?.[key] ?? 0) + orderNoise(key) * Math.max(1e-12, Math.abs(a), Math.abs(b));
    if (!(Math.abs(a - b) <= allowed))
      problems.push(`${key}: ${a} vs baseline ${b} (allowed ±${allowed.toExponential(2)})`);
  }
  baseline.advantages.forEach((a, i) => {
    const got = arrays.advantages[i]!;
    if (!(Math.abs(got - a) <= 1e-12 * Math.max(1e-12, Math.abs(a), Math.abs(got))))
      problems.push(`advantages[${i}]: ${got} vs ${a}`);
  });
  let token = 0;
  for (const row of baseline.tokenAdvantages) {
    for (const value of row) {
      if (arrays.tokenAdvantages[token] !== Math.fround(value))
        problems.push(`tokenAdvantages[${token}] differs`);
      token++;
    }
  }
  return problems.slice(0, 10);
}
