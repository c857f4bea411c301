import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { connectRedis } from './connect.ts';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

function recorder() {
  const warnings: Array<{ fields: Record<string, unknown>; message: string }> = [];
  return {
    warnings,
    warn: (fields: Record<string, unknown>, message: string) => warnings.push({ fields, message }),
  };
}

let server: Server | null = null;
afterEach(() => {
  server?.close();
  server = null;
});

describe('connectRedis', () => {
  it('connects with the given options', async () => {
    const log = recorder();
    const client = connectRedis(REDIS_URL, log, { maxRetriesPerRequest: null });
    try {
      expect(await client.ping()).toBe('PONG');
      expect(client.options.maxRetriesPerRequest).toBeNull();
      expect(log.warnings).toEqual([]);
    } finally {
      await client.quit();
    }
  });

  it('logs one warning per outage, however often it retries, without the password', async () => {
    // a port that accepts and drops every connection: each reconnect attempt fails again
    server = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    const log = recorder();
    let attempts = 0;
    const client = connectRedis(`redis://user:secret@127.0.0.1:${port}`, log, {
      retryStrategy: () => (++attempts < 5 ? 10 : null),
      maxRetriesPerRequest: 0,
    });
    await new Promise<void>((resolve) => client.once('end', () => resolve()));
    expect(attempts).toBeGreaterThanOrEqual(2);
    expect(log.warnings).toHaveLength(1);
    expect(log.warnings[0]!.message).toBe('Redis connection error');
    expect(log.warnings[0]!.fields['redis']).toBe(`redis://user:***@127.0.0.1:${port}`);
  });
});
