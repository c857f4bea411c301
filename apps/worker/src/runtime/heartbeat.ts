// Registry heartbeat: refreshes this worker's record (TTL) every interval with its busy and
// draining state; the reply carries the drain flag, so a drain whose pub/sub message was
// missed still takes effect. Timers only: nothing here blocks the event loop.
import {
  type DrainState,
  type StoreContext,
  type WorkerHeartbeat,
  heartbeatWorker,
} from '@anneal/store';
import type { Logger, TelemetryEmitter } from '@anneal/telemetry';

export interface HeartbeatOptions {
  store: StoreContext;
  intervalMs: number;
  ttlSeconds: number;
  record(): WorkerHeartbeat;
  onDrain(state: DrainState): void;
  /** After each heartbeat (e.g. re-reading flags a missed pub/sub message would have set). */
  afterBeat?(): Promise<void>;
  telemetry: TelemetryEmitter;
  logger: Logger;
}

export interface Heartbeat {
  /** One heartbeat now (also used at start-up to register before taking runs). */
  beat(): Promise<void>;
  stop(): void;
}

export function startHeartbeat(options: HeartbeatOptions): Heartbeat {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const beat = async () => {
    try {
      const drain = await heartbeatWorker(options.store, options.record(), options.ttlSeconds);
      options.telemetry.emit('worker:heartbeat', { atMs: Date.now() });
      if (drain.draining) options.onDrain(drain);
      await options.afterBeat?.();
    } catch (error) {
      options.logger.warn({ err: String(error) }, 'heartbeat failed; retrying next interval');
    }
  };
  // Each beat is scheduled from the previous one's start, so a slow Redis round trip does not
  // accumulate drift.
  const schedule = (at: number) => {
    if (stopped) return;
    timer = setTimeout(
      () => {
        const started = Date.now();
        void beat().finally(() => schedule(started + options.intervalMs));
      },
      Math.max(0, at - Date.now()),
    );
  };
  schedule(Date.now() + options.intervalMs);
  return {
    beat,
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
