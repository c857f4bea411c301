// Deleting a whole key namespace: tests, benchmarks and throwaway stacks (the demo) each
// use their own prefix and remove it when done.
import type { Redis } from 'ioredis';

/** Deletes every key starting with `prefix` (SCAN + DEL; safe on a live server). Returns the count. */
export async function deleteKeysWithPrefix(redis: Redis, prefix: string): Promise<number> {
  let deleted = 0;
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (found.length > 0) deleted += await redis.del(...found);
  } while (cursor !== '0');
  return deleted;
}
