// Test support: a real Redis (REDIS_URL) with a unique key prefix per test, cleaned up after.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { RunSpec } from '@anneal/protocol';
import { parseRunSpec } from '@anneal/protocol';
import { type StoreContext, createStoreContext, deleteKeysWithPrefix } from '../src/index.ts';

// Test support reads the test environment (like *.test.ts files, which the lint rule exempts).
// eslint-disable-next-line no-restricted-properties
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

export interface TestStore {
  ctx: StoreContext;
  redis: Redis;
  prefix: string;
  /** Extra connections (subscribers, blocking readers) closed by cleanup. */
  connection(): Redis;
  cleanup(): Promise<void>;
}

export async function testStore(): Promise<TestStore> {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const prefix = `{anneal-test-${randomUUID()}}`;
  const extra: Redis[] = [];
  return {
    ctx: createStoreContext(redis, prefix),
    redis,
    prefix,
    connection() {
      const c = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
      extra.push(c);
      return c;
    },
    async cleanup() {
      await Promise.all(extra.map((c) => c.quit().catch(() => c.disconnect())));
      await deleteKeysWithPrefix(redis, prefix);
      await redis.quit();
    },
  };
}

/** A resolved spec for tests. */
export function testSpec(yaml: string, pool = 'default'): RunSpec & { pool: string } {
  const parsed = parseRunSpec(yaml);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return { ...parsed.value, pool: parsed.value.pool ?? pool };
}

export { eventually } from '@anneal/testing';
