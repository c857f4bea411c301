// Control messages from the control plane (Redis pub/sub): cancel or pause a run this worker
// holds, or drain this worker. Each is idempotent; the store flags behind them are re-checked at step
// boundaries and heartbeats, so a message missed during a reconnect is not lost.
import type { Redis } from 'ioredis';
import type { ControlMessage } from '@anneal/protocol';
import { type StoreContext, pauseReason, readStopRequests, subscribeControl } from '@anneal/store';
import type { Logger } from '@anneal/telemetry';
import type { ActiveRuns, StopRequest } from './active-runs.ts';

export interface ControlHandlers {
  runs: ActiveRuns;
  workerId: string;
  drain(checkpointAndRelease: boolean): void;
  logger: Logger;
}

export function handleControlMessage(message: ControlMessage, h: ControlHandlers): void {
  if (message.type === 'cancel') {
    const run = h.runs.get(message.runId);
    if (!run) return; // another worker holds it (or nobody: the control plane handles that)
    h.logger.info({ runId: message.runId, reason: message.reason }, 'cancel requested');
    run.stop({ kind: 'cancel', reason: message.reason });
  } else if (message.type === 'pause') {
    const run = h.runs.get(message.runId);
    if (!run) return;
    h.logger.info({ runId: message.runId, reason: message.reason }, 'pause requested');
    run.stop({ kind: 'pause', reason: message.reason });
  } else if (message.workerId === h.workerId) {
    h.logger.info({ checkpointAndRelease: message.checkpointAndRelease }, 'drain requested');
    h.drain(message.checkpointAndRelease);
  }
}

export function subscribeWorkerControl(
  subscriber: Redis,
  prefix: string,
  handlers: ControlHandlers,
): Promise<() => Promise<void>> {
  return subscribeControl(
    subscriber,
    prefix,
    (message) => handleControlMessage(message, handlers),
    (raw) =>
      handlers.logger.warn({ raw: raw.slice(0, 200) }, 'ignored a malformed control message'),
  );
}

/** The stop the store says a held run was asked for (a cancel before a pause), or null. */
export async function requestedStop(
  store: StoreContext,
  runId: string,
): Promise<StopRequest | null> {
  const requests = await readStopRequests(store, runId);
  if (requests.cancel) {
    return { kind: 'cancel', reason: requests.cancel.reason ?? 'cancel requested' };
  }
  if (requests.pause) return { kind: 'pause', reason: pauseReason(requests.pause) };
  return null;
}
