import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { REDIS_URL, eventually } from '../../test/helpers.ts';
import { syncedRateLimitStore } from './rate-limit-store.ts';

let redis: Redis;
let namespace: string;
beforeEach(() => {
  redis = new Redis(REDIS_URL);
  namespace = `{anneal-test-${randomUUID()}}:ratelimit:`;
});
afterEach(async () => {
  const keys = await redis.keys(`${namespace}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
});

function incr(store: { incr: (...args: never[]) => void }, key: string, windowMs: number) {
  return new Promise<{ current: number; ttl: number }>((resolve, reject) =>
    (
      store.incr as (
        k: string,
        cb: (e: Error | null, r?: { current: number; ttl: number }) => void,
        w: number,
        m: number,
      ) => void
    )(key, (error, result) => (error || !result ? reject(error) : resolve(result)), windowMs, 100),
  );
}

describe('syncedRateLimitStore', () => {
  it('counts exactly in process and shares counts between replicas through Redis', async () => {
    const a = syncedRateLimitStore(redis, namespace, 5);
    const b = syncedRateLimitStore(redis, namespace, 5);
    const storeA = new a.Store({});
    const storeB = new b.Store({});
    expect((await incr(storeA, 'tok', 60_000)).current).toBe(1);
    expect((await incr(storeA, 'tok', 60_000)).current).toBe(2);
    const third = await incr(storeA, 'tok', 60_000);
    expect(third.current).toBe(3);
    expect(third.ttl).toBeGreaterThan(0);
    expect(third.ttl).toBeLessThanOrEqual(60_000);
    // Replica A's increments reach Redis; replica B's first flush learns the global count.
    await eventually(async () => (await redis.keys(`${namespace}tok:*`)).length === 1);
    const [key] = await redis.keys(`${namespace}tok:*`);
    await eventually(async () => (await redis.get(key ?? '')) === '3');
    await incr(storeB, 'tok', 60_000);
    await eventually(async () => (await redis.get(key ?? '')) === '4');
    await eventually(async () => (await incr(storeB, 'tok', 60_000)).current >= 5);
    expect(Number(await redis.pttl(key ?? ''))).toBeGreaterThan(0);
    await a.close();
    await b.close();
  });

  it('starts a new window when the old one ends', async () => {
    const s = syncedRateLimitStore(redis, namespace, 5);
    const store = new s.Store({});
    await incr(store, 'k', 50);
    const later = await eventually(async () => {
      const r = await incr(store, 'k', 50);
      return r.current === 1 ? r : null;
    });
    expect(later?.ttl).toBeLessThanOrEqual(50);
    await s.close();
  });
});
