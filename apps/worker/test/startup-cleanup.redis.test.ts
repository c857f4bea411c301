// A start-up step that throws after the worker opened its Redis connections and started its
// heartbeat timer: startWorker rejects with that error and closes what it had opened. Checked on
// the real Redis (CLIENT LIST by connection name) and by a real process that must exit by itself
// afterwards.
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { REDIS_URL, type TestEnv, eventually, testEnv } from './helpers.ts';
import { spawnWorker } from './process.ts';

/** This worker's connections in CLIENT LIST (the worker names them anneal-worker:<id>:<role>). */
async function workerClients(redis: Redis, workerId: string): Promise<string[]> {
  const list = (await redis.client('LIST')) as string;
  return list
    .split('\n')
    .map((line) => /\bname=(\S+)/.exec(line)?.[1] ?? '')
    .filter((name) => name.startsWith(`anneal-worker:${workerId}:`));
}

let env: TestEnv;
beforeEach(async () => {
  env = await testEnv();
});
afterEach(async () => {
  await env.cleanup();
});

describe('a failed start-up cleans up after itself', () => {
  it('closes the Redis connections it opened before the failing step', async () => {
    const workerId = `failed-start-${randomUUID()}`;
    let openAtFailure: string[] = [];
    await expect(
      env.startWorker(
        { workerId },
        {
          startMetricsServer: async () => {
            openAtFailure = await workerClients(env.redis, workerId);
            throw new Error('injected: metrics server failed');
          },
        },
      ),
    ).rejects.toThrow('injected: metrics server failed');
    // store, control and queue connections (and BullMQ's blocking duplicate of the last) were open…
    expect(openAtFailure).toEqual(
      expect.arrayContaining([
        `anneal-worker:${workerId}:store`,
        `anneal-worker:${workerId}:control`,
        `anneal-worker:${workerId}:queue`,
      ]),
    );
    // …and none is left once startWorker has rejected (quit waits for the server's reply).
    expect(await workerClients(env.redis, workerId)).toEqual([]);
  });

  it('leaves nothing holding the process open: it exits by itself', async () => {
    const workerId = `failed-start-${randomUUID()}`;
    const { child, output, exited } = spawnWorker({}, 'failedStart', [
      REDIS_URL,
      env.prefix,
      workerId,
    ]);
    try {
      await eventually(() => output().includes('start failed'), 20_000, 'start-up failure');
      // A heartbeat timer or an open socket would keep it running (the old code never exited).
      const code = await Promise.race([
        exited,
        eventually(() => child.exitCode !== null, 10_000, 'the process to exit by itself'),
      ]);
      expect(code).toBe(0);
      expect(output()).toContain('start failed: injected: metrics server failed');
    } finally {
      child.kill('SIGKILL');
    }
  });
});
