// Registers the catalogue's metrics for one app on that app's own prom-client Registry.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { METRICS, type MetricDefinition, type MetricName } from './catalogue.ts';
import type { AppName } from './labels.ts';

export type PromMetric = Counter<string> | Gauge<string> | Histogram<string>;
export type Labels = Record<string, string>;

export interface RegisteredMetric {
  definition: MetricDefinition;
  metric: PromMetric;
}

/** Catalogue metrics an app emits. */
export function metricsEmittedBy(
  app: AppName,
  metrics: readonly MetricDefinition[] = METRICS,
): MetricDefinition[] {
  return metrics.filter((m) => (m.emittedBy as readonly AppName[]).includes(app));
}

function create(def: MetricDefinition, registry: Registry): PromMetric {
  const common = {
    name: def.name,
    help: def.help,
    labelNames: [...def.labels],
    registers: [registry],
  };
  switch (def.type) {
    case 'counter':
      return new Counter(common);
    case 'gauge':
      return new Gauge(common);
    case 'histogram':
      return new Histogram({ ...common, buckets: [...(def.buckets ?? [])] });
  }
}

/** Creates every metric `app` emits on `registry`; fails if one is already registered there. */
export function registerCatalogue(
  registry: Registry,
  app: AppName,
  metrics: readonly MetricDefinition[] = METRICS,
): ReadonlyMap<MetricName, RegisteredMetric> {
  const out = new Map<MetricName, RegisteredMetric>();
  for (const definition of metricsEmittedBy(app, metrics)) {
    if (registry.getSingleMetric(definition.name)) {
      throw new Error(
        `metric ${definition.name} is already registered on this registry; ` +
          'create one Registry per app and call createMetrics once',
      );
    }
    out.set(definition.name as MetricName, { definition, metric: create(definition, registry) });
  }
  return out;
}
