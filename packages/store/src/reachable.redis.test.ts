import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { RedisUnreachableError, checkRedisReachable, redactRedisUrl } from './reachable.ts';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

describe('checkRedisReachable', () => {
  it('resolves against a real Redis', async () => {
    await expect(checkRedisReachable(REDIS_URL, 5_000)).resolves.toBeUndefined();
  });

  it('refused connection: RedisUnreachableError naming the URL and the reason', async () => {
    const error = await checkRedisReachable('redis://127.0.0.1:1', 5_000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedisUnreachableError);
    expect((error as Error).message).toMatch(
      /^cannot reach Redis at redis:\/\/127\.0\.0\.1:1: .*ECONNREFUSED/,
    );
  });

  it('a server that never answers: fails at the deadline', async () => {
    const silent = createServer(() => {}); // accepts, never replies
    await new Promise<void>((done) => silent.listen(0, '127.0.0.1', done));
    const { port } = silent.address() as { port: number };
    try {
      const error = await checkRedisReachable(`redis://127.0.0.1:${port}`, 300).catch(
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(RedisUnreachableError);
      expect((error as Error).message).toContain(`127.0.0.1:${port}`);
    } finally {
      silent.close();
    }
  });

  it('redacts passwords', () => {
    expect(redactRedisUrl('redis://user:secret@h:6379/0')).toBe('redis://user:***@h:6379/0');
    expect(redactRedisUrl('redis://h:6379')).toBe('redis://h:6379');
  });
});
