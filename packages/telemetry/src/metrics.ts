// createMetrics: the MetricsSink an app wires to its own prom-client Registry. Events in,
// catalogue metrics out. Apps create the Registry (never prom-client's global default one).
import { collectDefaultMetrics, type Registry } from 'prom-client';
import { buildCatalogue } from './catalogue.ts';
import { controlPlaneHandlers } from './control-plane-mapping.ts';
import type { TelemetryEmitter, TelemetryEventName, TelemetryEvents } from './events.ts';
import type { AppName } from './labels.ts';
import { registerCatalogue } from './registry.ts';
import { STEP_METRICS, type StepMetricTable } from './step-metrics.ts';
import { workerHandlers, type WorkerIdentity } from './worker-mapping.ts';
import { MetricWriter } from './writer.ts';

export interface CreateMetricsOptions {
  app: AppName;
  /** Anneal version, exported as anneal_build_info{app,version}. */
  version: string;
  /** Required for the worker: the pool and id put on every anneal_worker_* series. */
  worker?: WorkerIdentity;
  /**
   * How long a finished run's series stay exported, so Prometheus scrapes the final step before
   * they go. Default 60 s (four 15 s scrapes); 0 removes them at once.
   */
  runSeriesGraceMs?: number;
  /** Also export prom-client's process_* and nodejs_* metrics. Default true. */
  defaultMetrics?: boolean;
  /** The step-metric table the anneal_run_* step series come from. Default STEP_METRICS. */
  stepMetrics?: StepMetricTable;
}

export interface MetricsSink extends TelemetryEmitter {
  readonly registry: Registry;
  /** Removes every series labelled run_id=`runId` now; returns how many series went. */
  removeRunSeries(runId: string): number;
  /** Run ids that currently have series. */
  runIds(): string[];
  /** Cancels pending removals (removing those runs' series now). Call on shutdown. */
  close(): void;
}

type Handler = (payload: never) => void;

const WORKER_EVENTS: readonly TelemetryEventName[] = [
  'run:started',
  'run:ended',
  'step:committed',
  'worker:heartbeat',
  'worker:slots',
  'request:started',
  'request:finished',
  'attempt:failed',
];

function appOf(event: TelemetryEventName): AppName {
  return WORKER_EVENTS.includes(event) ? 'worker' : 'control-plane';
}

export function createMetrics(registry: Registry, options: CreateMetricsOptions): MetricsSink {
  const graceMs = options.runSeriesGraceMs ?? 60_000;
  if (!Number.isFinite(graceMs) || graceMs < 0) {
    throw new RangeError(`runSeriesGraceMs must be a finite number >= 0 (got ${graceMs})`);
  }
  const steps = options.stepMetrics ?? STEP_METRICS;
  const catalogue = buildCatalogue(steps);
  const writer = new MetricWriter(registerCatalogue(registry, options.app, catalogue), options.app);
  writer.set('anneal_build_info', { app: options.app, version: options.version }, 1);
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry });

  const timers = new Map<string, NodeJS.Timeout>();
  const runs = {
    scheduleRemoval(runId: string) {
      clearTimeout(timers.get(runId));
      if (graceMs === 0) {
        writer.removeRunSeries(runId);
        return;
      }
      const timer = setTimeout(() => {
        timers.delete(runId);
        writer.removeRunSeries(runId);
      }, graceMs);
      timer.unref();
      timers.set(runId, timer);
    },
    cancelRemoval(runId: string) {
      clearTimeout(timers.get(runId));
      timers.delete(runId);
    },
  };

  let handlers: Partial<Record<TelemetryEventName, Handler>>;
  if (options.app === 'worker') {
    if (!options.worker) throw new Error('createMetrics: app "worker" needs options.worker');
    handlers = workerHandlers(writer, options.worker, runs, steps) as typeof handlers;
  } else {
    handlers = controlPlaneHandlers(writer) as typeof handlers;
  }

  return {
    registry,
    emit<K extends TelemetryEventName>(name: K, payload: TelemetryEvents[K]) {
      const handler = handlers[name];
      if (!handler) {
        throw new Error(`event ${name} is a ${appOf(name)} event; this sink is ${options.app}'s`);
      }
      handler(payload as never);
    },
    removeRunSeries(runId) {
      runs.cancelRemoval(runId);
      return writer.removeRunSeries(runId);
    },
    runIds: () => writer.runIds(),
    close() {
      for (const runId of timers.keys()) this.removeRunSeries(runId);
    },
  };
}
