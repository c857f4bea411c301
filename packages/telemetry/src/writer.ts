// The only code that writes to the prom-client metrics. It checks each write against the
// catalogue (type, label names, finite values) and remembers every per-run label set it wrote,
// so that all of a run's series can be removed exactly when the run ends.
import { Counter, Gauge, Histogram } from 'prom-client';
import type { MetricName } from './catalogue.ts';
import type { AppName } from './labels.ts';
import type { Labels, PromMetric, RegisteredMetric } from './registry.ts';

export class MetricWriter {
  /** runId → (series key → [metric, labels]) of every per-run series written. */
  private readonly runSeries = new Map<string, Map<string, [PromMetric, Labels]>>();

  constructor(
    private readonly metrics: ReadonlyMap<MetricName, RegisteredMetric>,
    private readonly app: AppName,
  ) {}

  set(name: MetricName, labels: Labels, value: number): void {
    const metric = this.resolve(name, labels, 'gauge');
    if (typeof value !== 'number') throw new TypeError(`${name}: value must be a number`);
    (metric as Gauge<string>).set(labels, value);
  }

  inc(name: MetricName, labels: Labels, by = 1): void {
    const metric = this.resolve(name, labels, 'counter', 'gauge');
    if (!Number.isFinite(by) || (metric instanceof Counter && by < 0)) {
      throw new RangeError(`${name}: increment must be finite (and >= 0 for counters), got ${by}`);
    }
    (metric as Counter<string>).inc(labels, by);
  }

  observe(name: MetricName, labels: Labels, value: number): void {
    const metric = this.resolve(name, labels, 'histogram');
    if (!Number.isFinite(value)) {
      throw new RangeError(`${name}: observed value must be finite (got ${value})`);
    }
    (metric as Histogram<string>).observe(labels, value);
  }

  /** Removes every series of a gauge that is exported as a whole snapshot each time. */
  reset(name: MetricName): void {
    const entry = this.metrics.get(name);
    if (!entry)
      throw new Error(`${name} is not emitted by ${this.app} (see the catalogue's emittedBy)`);
    if (entry.definition.type !== 'gauge' || entry.definition.scope === 'run') {
      throw new Error(`${name}: only non-run gauges are reset as snapshots`);
    }
    entry.metric.reset();
  }

  /** Run ids with series currently exported. */
  runIds(): string[] {
    return [...this.runSeries.keys()];
  }

  /** Removes every series labelled run_id=`runId`; returns how many were removed. */
  removeRunSeries(runId: string): number {
    const series = this.runSeries.get(runId);
    if (!series) return 0;
    for (const [metric, labels] of series.values()) metric.remove(labels);
    this.runSeries.delete(runId);
    return series.size;
  }

  private resolve(name: MetricName, labels: Labels, ...types: string[]): PromMetric {
    const entry = this.metrics.get(name);
    if (!entry) {
      throw new Error(`${name} is not emitted by ${this.app} (see the catalogue's emittedBy)`);
    }
    const { definition, metric } = entry;
    if (!types.includes(definition.type)) {
      throw new Error(`${name} is a ${definition.type}; cannot ${types.join('/')}-write it`);
    }
    const expected = [...definition.labels].sort().join(',');
    const given = Object.keys(labels).sort().join(',');
    if (expected !== given) {
      throw new Error(`${name}: labels {${given}} do not match the catalogue's {${expected}}`);
    }
    const runId = labels['run_id'];
    if (runId !== undefined) this.track(runId, name, metric, labels);
    return this.checkClass(metric, definition.type);
  }

  private checkClass(metric: PromMetric, type: string): PromMetric {
    const ok =
      (type === 'counter' && metric instanceof Counter) ||
      (type === 'gauge' && metric instanceof Gauge) ||
      (type === 'histogram' && metric instanceof Histogram);
    if (!ok) throw new Error(`registry holds a different class for a ${type}`);
    return metric;
  }

  private track(runId: string, name: string, metric: PromMetric, labels: Labels): void {
    let series = this.runSeries.get(runId);
    if (!series) {
      series = new Map();
      this.runSeries.set(runId, series);
    }
    const key = `${name}${JSON.stringify(labels, Object.keys(labels).sort())}`;
    if (!series.has(key)) series.set(key, [metric, { ...labels }]);
  }
}
