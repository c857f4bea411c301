// Reads values back from a prom-client Registry for assertions.
import type { Registry } from 'prom-client';

export interface Sample {
  name: string;
  labels: Record<string, string | number>;
  value: number;
}

export async function samples(registry: Registry, metric: string): Promise<Sample[]> {
  const m = registry.getSingleMetric(metric);
  if (!m) throw new Error(`${metric} is not registered`);
  const { values } = await m.get();
  return values.map((v) => ({
    name: (v as { metricName?: string }).metricName ?? metric,
    labels: v.labels as Record<string, string | number>,
    value: v.value,
  }));
}

/** The value of the one sample of `metric` whose labels include `labels`; undefined if none. */
export async function valueOf(
  registry: Registry,
  metric: string,
  labels: Record<string, string> = {},
  seriesName = metric,
): Promise<number | undefined> {
  const matching = (await samples(registry, metric)).filter(
    (s) =>
      s.name === seriesName && Object.entries(labels).every(([k, v]) => String(s.labels[k]) === v),
  );
  if (matching.length > 1)
    throw new Error(`${metric}${JSON.stringify(labels)} matches ${matching.length} samples`);
  return matching[0]?.value;
}
