// Tinker metrics: keys carry one `:` and a reduction suffix (`loss:sum`, `clip_frac:mean`);
// backend-specific keys may have none (`skyrl.ai/grad_norm`). Values are never invented.
import { isObject } from '../http/request.ts';

/** Keeps numeric metrics; drops nulls and non-numbers (never invents values). */
export function readMetrics(value: unknown): Record<string, number> {
  const metrics: Record<string, number> = {};
  if (!isObject(value)) return metrics;
  for (const [key, metric] of Object.entries(value)) {
    if (typeof metric === 'number' && Number.isFinite(metric)) metrics[key] = metric;
  }
  return metrics;
}

export interface ParsedMetricKey {
  name: string;
  /** `sum`, `mean`, `min`, `max`, `last`, …; undefined for unsuffixed keys. */
  reduction: string | undefined;
}

/** `loss:sum` -> {name: 'loss', reduction: 'sum'}; `skyrl.ai/grad_norm` -> no reduction. */
export function parseMetricKey(key: string): ParsedMetricKey {
  const colon = key.lastIndexOf(':');
  if (colon <= 0 || colon === key.length - 1) return { name: key, reduction: undefined };
  return { name: key.slice(0, colon), reduction: key.slice(colon + 1) };
}

export function parseMetrics(
  metrics: Record<string, number>,
): Array<ParsedMetricKey & { key: string; value: number }> {
  return Object.entries(metrics).map(([key, value]) => ({ key, value, ...parseMetricKey(key) }));
}

/** Grad norm as the backend reports it (docs/engines.md "Gradient norm"), else null. */
export function gradNormOf(metrics: Record<string, number>): number | null {
  const preferred = metrics['grad_norm:last'] ?? metrics['skyrl.ai/grad_norm'];
  if (preferred !== undefined) return preferred;
  const other = parseMetrics(metrics).find((m) => m.name === 'grad_norm');
  return other ? other.value : null;
}

/**
 * Combine the metrics of a batch sent in chunks, by each key's reduction: `sum` adds, `mean`
 * averages weighted by each chunk's datum count, `min`/`max` take the extreme, and anything
 * else (`last`, unsuffixed) keeps the last chunk's value.
 */
export function combineMetrics(
  parts: ReadonlyArray<{ metrics: Record<string, number>; weight: number }>,
): Record<string, number> {
  const combined: Record<string, number> = {};
  const weights: Record<string, number> = {};
  for (const { metrics, weight } of parts) {
    for (const [key, value] of Object.entries(metrics)) {
      const previous = combined[key];
      const reduction = parseMetricKey(key).reduction;
      if (previous === undefined) {
        combined[key] = reduction === 'mean' ? value * weight : value;
        weights[key] = weight;
      } else if (reduction === 'sum') combined[key] = previous + value;
      else if (reduction === 'mean') {
        combined[key] = previous + value * weight;
        weights[key] = (weights[key] ?? 0) + weight;
      } else if (reduction === 'min') combined[key] = Math.min(previous, value);
      else if (reduction === 'max') combined[key] = Math.max(previous, value);
      else combined[key] = value;
    }
  }
  for (const key of Object.keys(combined)) {
    const total = weights[key] ?? 0;
    if (parseMetricKey(key).reduction === 'mean' && total > 0) {
      combined[key] = (combined[key] as number) / total;
    }
  }
  return combined;
}
