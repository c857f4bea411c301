// Logs the typed events: lifecycle at info, failures at warn, high-rate events at debug.
import type { EventBus, TelemetryEventName, TelemetryEvents } from './events.ts';
import type { Logger } from './logger.ts';

const INFO_EVENTS: ReadonlySet<TelemetryEventName> = new Set([
  'run:started',
  'run:ended',
  'run:transitioned',
  'step:committed',
]);
const WARN_EVENTS: ReadonlySet<TelemetryEventName> = new Set(['attempt:failed']);

function errorMessage(error: unknown): string | undefined {
  if (error === undefined) return undefined;
  return error instanceof Error ? error.message : String(error);
}

/** A log line's fields for an event (the error of attempt:failed becomes its message). */
export function eventLogFields<K extends TelemetryEventName>(
  name: K,
  payload: TelemetryEvents[K],
): Record<string, unknown> {
  if (name === 'attempt:failed') {
    const { error, ...rest } = payload as TelemetryEvents['attempt:failed'];
    return { event: name, ...rest, error: errorMessage(error) };
  }
  return { event: name, ...payload };
}

/** Subscribes `logger` to every event on `bus`; returns the unsubscribe function. */
export function logEvents(bus: EventBus, logger: Logger): () => void {
  return bus.onAny((name, payload) => {
    const fields = eventLogFields(name, payload);
    if (WARN_EVENTS.has(name)) logger.warn(fields, name);
    else if (INFO_EVENTS.has(name)) logger.info(fields, name);
    else logger.debug(fields, name);
  });
}
