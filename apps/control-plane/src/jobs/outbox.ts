// The enqueue relay (transactional outbox): createRun records the run and an outbox entry in one
// Lua script; the relay then adds the BullMQ job and clears the entry. POST /v1/runs answers once
// the run is recorded, without waiting for BullMQ. A sweep re-sends entries older than a few
// seconds (a crash between record and enqueue, a failed add); adding a job whose id exists is a
// no-op, so replicas and retries never duplicate a run. A resumed run (store/pause.ts) has an
// entry too: the sweep replaces its finished job, and leaves the entry while a worker still
// holds that job. Clears of one event-loop turn go out as
// one ZREM (a burst of submissions costs one command, not one per run): an entry cleared late, or
// not at all, is only re-sent by the sweep, which is harmless.
import {
  type StoreContext,
  clearOutbox,
  enqueueRun,
  getRun,
  listOutbox,
  type PoolQueues,
  requeueRun,
} from '@anneal/store';

export interface EnqueueRelay {
  /** Adds the run's job in the background. */
  enqueue(run: { id: string; pool: string; priority: number }): void;
  /** Re-sends outbox entries at least `minAgeMs` old; returns how many jobs it added. */
  sweep(minAgeMs?: number): Promise<number>;
  /** Starts the periodic sweep. */
  start(): void;
  /** Stops sweeping and waits for background enqueues. */
  close(): Promise<void>;
}

export interface RelayLog {
  warn(details: object, message: string): void;
}

export function createEnqueueRelay(
  store: StoreContext,
  queues: PoolQueues,
  log: RelayLog,
  options: { sweepEveryMs?: number; minAgeMs?: number } = {},
): EnqueueRelay {
  const sweepEveryMs = options.sweepEveryMs ?? 5000;
  const minAgeMs = options.minAgeMs ?? 5000;
  const inFlight = new Set<Promise<void>>();
  let timer: NodeJS.Timeout | null = null;
  let toClear: string[] = [];
  let clearing: Promise<void> | null = null;

  /** Resolves once the ZREM holding `runId` is done (it rejects with that command). */
  const clear = (runId: string): Promise<void> => {
    toClear.push(runId);
    clearing ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      const runIds = toClear;
      toClear = [];
      clearing = null;
      return clearOutbox(store, ...runIds);
    });
    return clearing;
  };

  const send = async (run: { id: string; pool: string; priority: number }) => {
    await enqueueRun(queues.get(run.pool), run);
    await clear(run.id);
  };

  const relay: EnqueueRelay = {
    enqueue(run) {
      const task = send(run)
        .catch((error: unknown) =>
          log.warn({ err: error, runId: run.id }, 'enqueue failed; the sweep retries'),
        )
        .finally(() => inFlight.delete(task));
      inFlight.add(task);
    },
    async sweep(age = minAgeMs) {
      let added = 0;
      for (const runId of await listOutbox(store, age)) {
        const run = await getRun(store, runId);
        if (run?.state === 'queued') {
          const sent = await requeueRun(queues.get(run.pool), run);
          if (sent !== 'busy') await clear(runId);
          if (sent === 'added') added += 1;
        } else {
          await clear(runId);
        }
      }
      return added;
    },
    start() {
      if (timer) return;
      timer = setInterval(() => {
        relay.sweep().catch((error: unknown) => log.warn({ err: error }, 'outbox sweep failed'));
      }, sweepEveryMs);
      timer.unref();
    },
    async close() {
      if (timer) clearInterval(timer);
      timer = null;
      await Promise.all([...inFlight]);
    },
  };
  return relay;
}
