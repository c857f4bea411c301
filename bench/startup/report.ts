// Formatting helpers of the start-up bench.
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function ratio(value: number, baseline: number): number {
  return baseline > 0 ? value / baseline : Number.NaN;
}

const WIDTHS = [22, 11, 13, 12];

export function row(cells: string[]): string {
  return cells
    .map((cell, i) => (i === 0 ? cell.padEnd(WIDTHS[i] ?? 10) : cell.padStart(WIDTHS[i] ?? 10)))
    .join('');
}
