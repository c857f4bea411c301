import { createServer } from 'node:net';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { freePort, redisServerBinary, startRedisServer, waitForPing } from '../src/index.ts';

describe('freePort', () => {
  it('returns a port a server can listen on', async () => {
    const port = await freePort();
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
    await new Promise((resolve) => server.close(resolve));
    expect(port).toBeGreaterThan(0);
  });
});

describe('startRedisServer', () => {
  it('answers PING once started, survives kill + start, and is gone after stop', async () => {
    expect(redisServerBinary(), 'redis-server on PATH').not.toBeNull();
    const redis = await startRedisServer({ args: ['--appendonly', 'yes'] });
    await waitForPing(redis.port, 1000);
    await redis.kill();
    await expect(waitForPing(redis.port, 200)).rejects.toThrow(/did not answer PING/);
    await redis.start();
    await waitForPing(redis.port, 1000);
    await redis.stop();
    await expect(waitForPing(redis.port, 200)).rejects.toThrow(/did not answer PING/);
    expect(existsSync(redis.dir)).toBe(false);
  });

  it('names the failure when the server cannot start', async () => {
    await expect(startRedisServer({ args: ['--no-such-directive', 'x'] })).rejects.toThrow(
      /exited before answering PING/,
    );
  });
});
