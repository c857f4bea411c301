// `anneal up`: control plane + one worker; stdout is exactly `ready http://127.0.0.1:N`.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { REDIS_URL, type Server, startServer } from './cli-process.ts';

const prefix = `{anneal-up-test-${randomUUID()}}`;
const token = `up-test-token-${randomUUID()}`;
let server: Server | undefined;

afterAll(async () => {
  await server?.stop();
  const redis = new Redis(REDIS_URL);
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
});

describe('anneal up', () => {
  it('serves the API with one registered worker and prints one ready line', async () => {
    const started = await startServer(
      ['up', '--port', '0'],
      {
        ANNEAL_KEY_PREFIX: prefix,
        ANNEAL_TOKEN: token,
        REDIS_URL,
        ANNEAL_WORKER_ID: `up-${randomUUID().slice(0, 8)}`,
      },
      /^ready (http:\/\/127\.0\.0\.1:\d+)\n/m,
      60_000,
    );
    server = started.server;
    const url = started.match[1] ?? '';
    expect(server.stdout()).toBe(`ready ${url}\n`);
    const headers = { authorization: `Bearer ${token}` };
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const workers = (await (await fetch(`${url}/v1/workers`, { headers })).json()) as {
      workers: Array<{ pool: string }>;
    };
    expect(workers.workers).toMatchObject([{ pool: 'default' }]);
    expect(await server.stop()).toBe(0);
    expect(server.stdout()).toBe(`ready ${url}\n`);
  }, 90_000);
});
