// SSE with acknowledged writes on (docs/reliability.md "What a failover keeps"): an event is
// handed to clients only once a Redis replica holds it, so a failover can never take back an
// event a client has seen. A private primary and replica (@anneal/testing's startRedisServer);
// the replica is paused (SIGSTOP) to fall behind. Live events (the event hub) and a replay after
// Last-Event-ID (services/runs/confirmed-events.ts) are both held back until it catches up.
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  appendStep,
  createRun,
  createStoreContext,
  startRun,
  type StoreContext,
} from '@anneal/store';
import { parseRunSpec, resolveRunSpec } from '@anneal/protocol';
import {
  type RedisServer as PrivateRedis,
  redisServerBinary,
  startRedisServer,
} from '@anneal/testing';
import { replicaInSync } from '../../../packages/store/test/replicas.ts';
import { buildApp } from '../src/app.ts';
import { TOKENS, auth, eventually, testOperatorConfig } from './helpers.ts';
import type { SseEvent } from './sse.ts';

let primary: PrivateRedis;
let replica: PrivateRedis;
let app: FastifyInstance;
let url: string;
let writer: StoreContext;
const clients: Redis[] = [];
const prefix = `{anneal-sse-repl-${randomUUID()}}`;
const operator = testOperatorConfig();

const connect = () => {
  const c = new Redis(primary.url, { maxRetriesPerRequest: null });
  c.on('error', () => {});
  clients.push(c);
  return c;
};

/** WAITs the primary has finished (a fence that timed out counts once it returns). */
async function waitCalls(): Promise<number> {
  const stats = await connect().info('commandstats');
  return Number(/^cmdstat_wait:calls=(\d+)/m.exec(stats)?.[1] ?? 0);
}

/** An SSE client collecting what it receives until stopped. */
function follow(runId: string, lastEventId?: string) {
  const events: SseEvent[] = [];
  const controller = new AbortController();
  const done = (async () => {
    const res = await fetch(`${url}/v1/runs/${runId}/events`, {
      headers: {
        ...auth(TOKENS.acmeViewer),
        ...(lastEventId !== undefined && { 'last-event-id': lastEventId }),
      },
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    for (;;) {
      const { value, done: end } = await reader.read();
      if (end) return;
      buffer += decoder.decode(value, { stream: true });
      for (let at = buffer.indexOf('\n\n'); at >= 0; at = buffer.indexOf('\n\n')) {
        const frame = buffer.slice(0, at);
        buffer = buffer.slice(at + 2);
        const id = /^id: (.*)$/m.exec(frame)?.[1];
        const data = /^data: (.*)$/m.exec(frame)?.[1];
        if (id && data) events.push({ id, event: 'x', data: JSON.parse(data) });
      }
    }
  })().catch(() => undefined);
  return { events, stop: () => (controller.abort(), done) };
}

const steps = (events: SseEvent[]) =>
  events.filter((e) => e.data.type === 'step:committed').map((e) => e.data.step);

async function runningRun(): Promise<string> {
  const parsed = parseRunSpec('kind: sft');
  if (!parsed.ok) throw new Error('spec');
  const spec = resolveRunSpec(parsed.value, operator);
  if (!spec.ok) throw new Error('resolve');
  const created = await createRun(writer, { tenant: 'acme', spec: spec.value });
  if (created.status !== 'created') throw new Error('create');
  await startRun(writer, created.run.id, 'w1');
  return created.run.id;
}

beforeAll(async () => {
  const binary = redisServerBinary();
  if (!binary)
    throw new Error('redis-server is not on PATH (Debian: apt-get install redis-server)');
  primary = await startRedisServer({ binary, args: ['--repl-diskless-sync-delay', '0'] });
  replica = await startRedisServer({
    binary,
    args: ['--replicaof', '127.0.0.1', String(primary.port)],
  });
  await eventually(() => replicaInSync(primary, replica), 30_000);
  // A worker's writes, not waiting for the replica (as with the wait off): only the fence holds.
  writer = createStoreContext(connect(), prefix);
  app = await buildApp({
    operator,
    redis: connect(),
    durable: { redis: connect(), replication: { replicas: 'auto', timeoutMs: 300 } },
    prefix,
    createBlockingClient: connect,
    defaultMetrics: false,
    settings: { sseKeepAliveMs: 500 },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
}, 60_000);

afterAll(async () => {
  await app?.close();
  for (const c of clients) c.disconnect();
  await replica?.stop();
  await primary?.stop();
});

describe('SSE hands out only events a replica holds', () => {
  it('live: a step event waits while the replica is behind, then arrives once', async () => {
    const runId = await runningRun();
    const client = follow(runId);
    await appendStep(writer, runId, 1, { loss: 1 });
    await eventually(() => steps(client.events).length === 1);
    replica.pause();
    try {
      const before = await waitCalls();
      await appendStep(writer, runId, 2, { loss: 1 });
      // The hub read step 2 and fenced it: a WAIT that ran out with the replica stopped.
      await eventually(async () => (await waitCalls()) > before + 1);
      expect(steps(client.events)).toEqual([1]);
    } finally {
      replica.resume();
    }
    await eventually(() => steps(client.events).length === 2);
    expect(steps(client.events)).toEqual([1, 2]);
    await client.stop();
  });

  it('replay after Last-Event-ID: held back the same way', async () => {
    const runId = await runningRun();
    await eventually(() => replicaInSync(primary, replica), 10_000);
    replica.pause();
    let client: ReturnType<typeof follow> | undefined;
    try {
      await appendStep(writer, runId, 1, { loss: 1 });
      const before = await waitCalls();
      client = follow(runId, '0');
      await eventually(async () => (await waitCalls()) > before + 1);
      expect(client.events).toEqual([]);
    } finally {
      replica.resume();
    }
    await eventually(() => steps(client!.events).length === 1);
    expect(client.events.map((e) => e.data.type)).toEqual([
      'run:state',
      'run:state',
      'step:committed',
    ]);
    await client.stop();
  });
});
