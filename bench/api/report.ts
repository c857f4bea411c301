// Formatting helpers, the request body and the SSE stream count of the API bench.
export const SPEC_BODY = JSON.stringify({ kind: 'grpo', steps: 50, labels: { bench: 'api' } });

/** SSE streams the bench follows at once, one per run (one per GPU of a 64-GPU pool). */
export const SSE_STREAMS = 64;

export function ratio(value: number, baseline: number): number {
  return baseline > 0 ? value / baseline : Number.NaN;
}

const WIDTHS = [20, 10, 10, 10, 12, 11];

export function formatRow(cells: string[]): string {
  return cells
    .map((cell, i) => (i === 0 ? cell.padEnd(WIDTHS[i] ?? 10) : cell.padStart(WIDTHS[i] ?? 10)))
    .join('');
}
