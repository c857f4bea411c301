// A @fastify/rate-limit store that counts in process and syncs to Redis in the background, so a
// request never waits for a Redis round trip to be rate-limited. Fixed windows aligned to the
// epoch; every ~flushMs the local increments go to Redis (INCRBY) and the reply (the count of all
// replicas) becomes the new baseline. Exact for one replica; with several, a client can exceed its
// limit by what other replicas accepted since their last flush (bounded by flushMs).
import type { FastifyRateLimitStore, FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import type { Redis } from 'ioredis';

interface Counter {
  windowStart: number;
  timeWindow: number;
  /** Global count Redis returned at the last flush (this replica's flushed increments included). */
  remote: number;
  /** Increments not yet sent. */
  pending: number;
}

type Callback = Parameters<FastifyRateLimitStore['incr']>[1];

export interface SyncedRateLimitStores {
  /** Pass as the plugin's `store` option (the plugin instantiates it). */
  Store: FastifyRateLimitStoreCtor;
  /** Sends what is pending and stops the timer. */
  close(): Promise<void>;
}

export function syncedRateLimitStore(
  redis: Redis,
  namespace: string,
  flushMs = 20,
): SyncedRateLimitStores {
  const counters = new Map<string, Counter>();
  let timer: NodeJS.Timeout | null = null;
  let closed = false;

  const redisKey = (key: string, counter: Counter) => `${namespace}${key}:${counter.windowStart}`;

  async function flush(): Promise<void> {
    timer = null;
    const now = Date.now();
    const batch: Array<[string, Counter, number]> = [];
    for (const [key, counter] of counters) {
      if (counter.pending > 0) {
        batch.push([key, counter, counter.pending]);
        counter.pending = 0;
      } else if (counter.windowStart + counter.timeWindow <= now) {
        counters.delete(key);
      }
    }
    if (batch.length === 0) return;
    const pipeline = redis.pipeline();
    for (const [key, counter, sent] of batch) {
      pipeline
        .incrby(redisKey(key, counter), sent)
        .pexpire(redisKey(key, counter), counter.timeWindow + 1000);
    }
    const replies = (await pipeline.exec().catch(() => null)) ?? [];
    batch.forEach(([, counter, sent], i) => {
      const [error, total] = replies[i * 2] ?? [new Error('no reply'), null];
      if (error || typeof total !== 'number')
        counter.pending += sent; // retry with the next flush
      else counter.remote = Math.max(counter.remote + sent, total);
    });
    if (batch.some(([, counter]) => counter.pending > 0)) schedule();
  }

  function schedule(): void {
    if (timer || closed) return;
    timer = setTimeout(() => void flush(), flushMs);
    timer.unref();
  }

  class Store implements FastifyRateLimitStore {
    incr(key: string, callback: Callback, timeWindow: number): void {
      const now = Date.now();
      const windowStart = Math.floor(now / timeWindow) * timeWindow;
      let counter = counters.get(key);
      if (!counter || counter.windowStart !== windowStart || counter.timeWindow !== timeWindow) {
        counter = { windowStart, timeWindow, remote: 0, pending: 0 };
        counters.set(key, counter);
      }
      counter.pending += 1;
      schedule();
      callback(null, {
        current: counter.remote + counter.pending,
        ttl: windowStart + timeWindow - now,
      });
    }

    child(): Store {
      return this;
    }
  }

  return {
    Store,
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      await flush();
    },
  };
}
