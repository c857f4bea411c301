// Typed `noun:verb` events. Packages and app code emit them; metrics (createMetrics) and logs
// (logEvents) subscribe. Payloads carry only what the metrics and logs need, in plain numbers;
// `step:committed` carries the step record itself, mapped by the step-metric table.
import type { EngineName, Outcome, QueueState, Subsystem, WorkerState } from './labels.ts';
import type { GuardrailFiredEvent, RunKind, RunState, Usage, UsageCost } from '@anneal/protocol';

/**
 * One committed step record, as the executor committed it (protocol WireStepMetrics: record key ->
 * number, null when not reported). The metrics sink sets the anneal_run_* series from the keys the
 * step-metric table (step-metrics.ts) maps; other keys live in the record only.
 */
export interface StepCommitted {
  runId: string;
  step: number;
  /** Unix time of the commit, ms. */
  atMs: number;
  metrics: Readonly<Record<string, number | null>>;
}

export interface TelemetryEvents {
  // worker: run lifecycle and training steps
  'run:started': { runId: string; kind: RunKind; pool: string; atMs: number };
  /** The worker let go of the run: finished, paused, or handed back (drain, shutdown, lost lease). */
  'run:ended': {
    runId: string;
    reason: 'succeeded' | 'failed' | 'cancelled' | 'paused' | 'released';
    atMs: number;
  };
  'step:committed': StepCommitted;
  /** A guardrail rule fired (docs/guardrails.md): the run stream's event (protocol
   * GuardrailFiredEvent) without its `type`; a rollback's `restored` names the step restored. */
  'guardrail:fired': Omit<GuardrailFiredEvent, 'type'>;
  /** Usage metered with a committed step or an attempt's slot time (docs/usage.md): the
   * increment, never a running total; a duplicate step commit emits nothing. */
  'usage:metered': { tenant: string; usage: Usage; costUsd: UsageCost };
  // worker: process health
  'worker:heartbeat': { atMs: number };
  'worker:slots': { busy: number; total: number };
  /** A rollout request served inside the run's fair share of an inference endpoint
   * (docs/operations.md "Fair share of an endpoint"). */
  'fleet:served': {
    runId: string;
    endpoint: string;
    sequences: number;
    tokens: number;
    waitedSeconds: number;
  };
  'request:started': { engine: EngineName };
  'request:finished': { engine: EngineName; outcome: Outcome; durationSeconds: number };
  'attempt:failed': { subsystem: Subsystem; willRetry: boolean; error?: unknown };
  // control plane
  'http:responded': {
    route: string;
    method: string;
    statusCode: number;
    durationSeconds: number;
  };
  /** A snapshot of one pool, taken by the control plane (on scrape or on a timer). */
  'pool:observed': {
    pool: string;
    queue: Readonly<Record<QueueState, number>>;
    /** null when no run waits. */
    oldestWaitingAgeSeconds: number | null;
    workers: Readonly<Record<WorkerState, number>>;
  };
  /**
   * Every worker the registry knows (live, or gone without a clean shutdown), with the age of
   * its last heartbeat. A snapshot: workers not listed are no longer exported.
   */
  'workers:observed': {
    workers: ReadonlyArray<{ pool: string; worker: string; heartbeatAgeSeconds: number }>;
  };
  /** Run counts by state and kind; missing combinations are reported as 0. */
  'runs:observed': {
    counts: ReadonlyArray<{ state: RunState; kind: RunKind; count: number }>;
  };
  'run:transitioned': {
    runId: string;
    kind: RunKind;
    pool: string;
    state: RunState;
    /** Set when the run entered `running`: how long it waited in the queue. */
    queuedSeconds?: number;
  };
}

export type TelemetryEventName = keyof TelemetryEvents;

/** What packages accept to report events (satisfied by createEventBus and by createMetrics). */
export interface TelemetryEmitter {
  emit<K extends TelemetryEventName>(name: K, payload: TelemetryEvents[K]): void;
}

export const noopEmitter: TelemetryEmitter = { emit: () => undefined };

type Listener<K extends TelemetryEventName> = (payload: TelemetryEvents[K]) => void;
type AnyListener = <K extends TelemetryEventName>(name: K, payload: TelemetryEvents[K]) => void;

export interface EventBus extends TelemetryEmitter {
  on<K extends TelemetryEventName>(name: K, listener: Listener<K>): () => void;
  /** Subscribe to every event (metrics, logs); returns the unsubscribe function. */
  onAny(listener: AnyListener): () => void;
}

export interface EventBusOptions {
  /**
   * Called when a listener throws. Default: rethrow to the emitter, so a broken subscriber is
   * loud. Apps pass a logging handler so a telemetry bug cannot fail a training step.
   */
  onListenerError?: (error: unknown, event: TelemetryEventName) => void;
}

/** Synchronous typed event bus; listeners run in subscription order. */
export function createEventBus(options: EventBusOptions = {}): EventBus {
  const named = new Map<TelemetryEventName, Set<(payload: never) => void>>();
  const any = new Set<AnyListener>();
  const call = (event: TelemetryEventName, fn: () => void) => {
    try {
      fn();
    } catch (error) {
      if (!options.onListenerError) throw error;
      options.onListenerError(error, event);
    }
  };
  return {
    emit(name, payload) {
      for (const listener of named.get(name) ?? []) call(name, () => listener(payload as never));
      for (const listener of any) call(name, () => listener(name, payload));
    },
    on(name, listener) {
      const set = named.get(name) ?? new Set();
      named.set(name, set);
      set.add(listener as (payload: never) => void);
      return () => set.delete(listener as (payload: never) => void);
    },
    onAny(listener) {
      any.add(listener);
      return () => any.delete(listener);
    },
  };
}
