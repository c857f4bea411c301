// A Redis outage seen from the API: requests answer 503 ANNEAL_ERR_UNAVAILABLE at once instead
// of waiting in the client's queue, and a POST the client gave up on is not executed when Redis
// comes back (before: 46 of 92 abandoned submissions became runs after a 70 s outage). The outage
// is a TCP proxy in front of the test Redis that refuses connections while "down".
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { deleteKeysWithPrefix, keys } from '@anneal/store';
import { createLogger } from '@anneal/telemetry';
import { parseEnv, startControlPlane, type RunningControlPlane } from '../src/index.ts';
import { REDIS_URL, TOKENS, eventually, testOperatorConfig } from './helpers.ts';

/** Forwards 127.0.0.1:<port> to the test Redis; `down()` drops every connection and refuses new
 * ones on the same port until `up()`. */
class RedisProxy {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  async up(): Promise<void> {
    if (this.server) return;
    const target = new URL(REDIS_URL);
    this.server = net.createServer((client) => {
      const upstream = net.connect(Number(target.port || 6379), target.hostname);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => socket.destroy());
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  async down(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) =>
      this.server ? this.server.close(() => resolve()) : resolve(),
    );
    this.server = undefined;
  }
}

let proxy: RedisProxy;
let plane: RunningControlPlane;
let prefix: string;
const direct = new Redis(REDIS_URL, { maxRetriesPerRequest: null });

beforeEach(async () => {
  proxy = new RedisProxy();
  await proxy.up();
  prefix = `{anneal-test-${randomUUID()}}`;
  plane = await startControlPlane({
    env: parseEnv({
      REDIS_URL: `redis://127.0.0.1:${proxy.port}`,
      ANNEAL_KEY_PREFIX: prefix,
      ANNEAL_HOST: '127.0.0.1',
      ANNEAL_PORT: '0',
    }),
    operator: { operator: testOperatorConfig() },
    logger: createLogger({ name: 'control-plane', level: 'silent' }),
  });
});
afterEach(async () => {
  await proxy.up();
  await plane.close();
  await proxy.down();
  await deleteKeysWithPrefix(direct, prefix);
});

const submitRun = (signal?: AbortSignal) =>
  fetch(`${plane.url}/v1/runs`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${TOKENS.acmeSubmitter}`,
      'content-type': 'application/yaml',
    },
    body: 'kind: sft\nsteps: 1\n',
    ...(signal && { signal }),
  });

describe('during a Redis outage', () => {
  it('answers 503 at once and executes nothing the client gave up on', async () => {
    expect((await submitRun()).status).toBe(201);
    await proxy.down();
    const started = Date.now();
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => submitRun(AbortSignal.timeout(10_000))),
    );
    const elapsedMs = Date.now() - started;
    for (const answer of answers) {
      expect(answer.status).toBe(503);
      expect(await answer.json()).toMatchObject({ code: 'ANNEAL_ERR_UNAVAILABLE' });
    }
    expect(elapsedMs).toBeLessThan(5_000); // bounded: the client would wait for the whole outage
    expect((await fetch(`${plane.url}/readyz`)).status).toBe(503);
    expect((await fetch(`${plane.url}/healthz`)).status).toBe(200);

    await proxy.up();
    const after = await eventually(async () => (await submitRun()).status === 201);
    expect(after).toBe(true);
    // The first run and the one after the outage: none of the five refused submissions.
    expect(await direct.zcard(keys(prefix).tenantRuns('acme'))).toBe(2);
  });
});
