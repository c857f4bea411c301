// The servers under test, in a child process of the bench (so the load generator does not share
// their event loop): the real control plane (buildApp on Redis) and a bare Fastify baseline that
// answers the same payloads with no auth, no validation and no Redis. Prints one JSON line with
// their URLs, cleans its Redis keys on SIGTERM. The bench reads this process's CPU time and Redis
// commands, and runs its profiler, over the IPC channel (probe.ts).
import { randomUUID } from 'node:crypto';
import Fastify from 'fastify';
import { Redis } from 'ioredis';
import { buildApp, sha256Hex } from '@anneal/control-plane';
import { localOperatorConfig, validateOperatorConfig } from '@anneal/protocol';
import { serveProbe } from './probe.ts';
import { SPEC_BODY, SSE_STREAMS } from './report.ts';
import { deleteKeysWithPrefix } from '@anneal/store';

serveProbe(); // first: it counts the commands of every Redis client created below

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `{anneal-bench-${randomUUID()}}`;
const token = `bench-${randomUUID()}`;

const base = localOperatorConfig(sha256Hex(token));
const parsed = validateOperatorConfig({
  ...base,
  // The bench measures the request path, rate-limit accounting included, not the limit itself.
  tokens: base.tokens.map((t) => ({ ...t, rateLimit: { max: 1_000_000_000, windowSeconds: 60 } })),
});
if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));

// The request client as the control plane's server.ts makes it.
const redis = new Redis(redisUrl, {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  enableAutoPipelining: true,
});
await new Promise((resolve) => redis.once('ready', resolve));
const blocking: Redis[] = [];
const control = await buildApp({
  operator: parsed.value,
  redis,
  prefix,
  defaultMetrics: false,
  // Like the rate limit above: the SSE phase measures streams, not the per-token cap (32).
  settings: { sseMaxStreamsPerToken: SSE_STREAMS },
  createBlockingClient: () => {
    const client = new Redis(redisUrl, { maxRetriesPerRequest: null, enableAutoPipelining: true });
    blocking.push(client);
    return client;
  },
});
const created = await control.inject({
  method: 'POST',
  url: '/v1/runs',
  headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
  payload: SPEC_BODY,
});
if (created.statusCode !== 201) throw new Error(`setup submit failed: ${created.body}`);
const runId = (created.json() as { id: string }).id;
// The SSE phase follows one stream per run, as a dashboard watching a pool would.
const sseRunIds: string[] = [];
for (let i = 0; i < SSE_STREAMS; i++) {
  const run = await control.inject({
    method: 'POST',
    url: '/v1/runs',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    payload: SPEC_BODY,
  });
  if (run.statusCode !== 201) throw new Error(`setup submit failed: ${run.body}`);
  sseRunIds.push((run.json() as { id: string }).id);
}
const runBody = (
  await control.inject({ url: `/v1/runs/${runId}`, headers: { authorization: `Bearer ${token}` } })
).body;

const bare = Fastify();
bare.get('/bare/runs/:id', async (_request, reply) => reply.type('application/json').send(runBody));
bare.post('/bare/runs', async (_request, reply) =>
  reply.code(201).type('application/json').send(created.body),
);

const controlUrl = await control.listen({ host: '127.0.0.1', port: 0 });
const bareUrl = await bare.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(
  `${JSON.stringify({ controlUrl, bareUrl, token, runId, prefix, sseRunIds })}\n`,
);

process.once('SIGTERM', async () => {
  await bare.close();
  await control.close();
  for (const client of blocking) client.disconnect();
  await deleteKeysWithPrefix(redis, prefix);
  await redis.quit();
  process.exit(0);
});
