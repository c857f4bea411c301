// Control plane restarted mid-run with SSE clients attached: the shutdown ends their streams,
// they reconnect (as EventSource does) with Last-Event-ID to the restarted control plane on the
// same port, and each ends with exactly the run's event stream — none lost, none twice, in
// order. Steps are committed through @anneal/store as a worker commits them, before, during and
// after the restart. Figure: control plane closed -> every client receiving events again.
import { createHash, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localOperatorConfig } from '@anneal/protocol';
import { type RunningControlPlane, parseEnv, startControlPlane } from '@anneal/control-plane';
import {
  type StoreContext,
  appendStep,
  createStoreContext,
  deleteKeysWithPrefix,
  finishRun,
  heartbeatWorker,
  readEvents,
  startRun,
} from '@anneal/store';
import { createLogger } from '@anneal/telemetry';
import { recordResult } from '../../worker/test/reliability/results.ts';
import { REDIS_URL } from './cli-process.ts';
import { sseClient } from './sse-client.ts';

const CLIENTS = 3;
const STEPS = 30;
const RESTART_AFTER = 12;
const token = `reliability-${randomUUID()}`;
const prefix = `{anneal-cp-restart-${randomUUID()}}`;
let plane: RunningControlPlane;
let port = 0;
let redis: Redis;
let store: StoreContext;

const start = async (listenPort: number) =>
  startControlPlane({
    env: parseEnv({
      REDIS_URL,
      ANNEAL_KEY_PREFIX: prefix,
      ANNEAL_HOST: '127.0.0.1',
      ANNEAL_PORT: String(listenPort),
    }),
    operator: {
      operator: localOperatorConfig(createHash('sha256').update(token).digest('hex')),
    },
    logger: createLogger({ name: 'control-plane', level: 'error' }),
  });

beforeAll(async () => {
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  store = createStoreContext(redis, prefix);
  plane = await start(0);
  port = plane.port;
});

afterAll(async () => {
  await plane?.close().catch(() => {});
  await deleteKeysWithPrefix(redis, prefix);
  await redis.quit();
});

describe('control plane restarted with SSE clients attached', () => {
  it('every client resumes with Last-Event-ID: no event lost, none twice', async () => {
    const created = await fetch(`${plane.url}/v1/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'sft', steps: STEPS }),
    });
    expect(created.status).toBe(201);
    const runId = ((await created.json()) as { id: string }).id;
    // A live worker record: the control plane's lost-worker sweep leaves the run alone.
    await heartbeatWorker(
      store,
      {
        id: 'sse-w',
        pool: 'default',
        slots: 1,
        busy: 1,
        runs: [runId],
        startedAt: new Date().toISOString(),
        version: '0.0.0',
      },
      3600,
    );
    expect((await startRun(store, runId, 'sse-w')).status).toBe('started');
    let finalId: string | null = null;
    const url = `${plane.url}/v1/runs/${runId}/events`;
    const clients = Array.from({ length: CLIENTS }, () =>
      sseClient({
        url,
        token,
        finished: (c) => finalId !== null && c.events.at(-1)?.id === finalId,
        stopAfterMs: 120_000,
      }),
    );
    const commit = async (step: number) => {
      const result = await appendStep(store, runId, step, { loss: 1 / step });
      expect(result.status).toBe('committed');
      await new Promise((resolve) => setTimeout(resolve, 20));
    };
    for (let step = 1; step <= RESTART_AFTER; step++) await commit(step);

    const closedAt = Date.now();
    await plane.close(); // ends every open stream at once
    // Steps keep coming while no control plane is up (the worker does not need it).
    for (let step = RESTART_AFTER + 1; step <= RESTART_AFTER + 3; step++) await commit(step);
    plane = await start(port);
    for (let step = RESTART_AFTER + 4; step <= STEPS; step++) await commit(step);
    expect((await finishRun(store, runId, { state: 'succeeded', reason: 'done' })).status).toBe(
      'ok',
    );
    const stream = await readEvents(store, runId, '0', 10_000);
    finalId = stream.at(-1)!.id;
    await Promise.all(clients.map((c) => c.done));

    const expectedIds = stream.map((e) => e.id);
    const expectedSteps = Array.from({ length: STEPS }, (_, i) => i + 1);
    let lost = 0;
    let duplicated = 0;
    for (const client of clients) {
      expect(client.reconnects).toBeGreaterThanOrEqual(1); // the restart did cut the stream
      const ids = client.ids();
      lost += expectedIds.filter((id) => !ids.includes(id)).length;
      duplicated += ids.length - new Set(ids).size;
      const missing = expectedIds.flatMap((id, i) =>
        ids.includes(id) ? [] : [`#${i} ${stream[i]?.event.type}`],
      );
      expect(ids, `missing ${missing.join(', ')}`).toEqual(expectedIds);
      expect(client.steps()).toEqual(expectedSteps);
    }
    expect({ lost, duplicated }).toEqual({ lost: 0, duplicated: 0 });
    const resumed = clients.map((c) => c.resumedAt ?? Date.now());
    await recordResult({
      scenario: 'control plane restart (SSE)',
      variant: `${CLIENTS} clients`,
      lost,
      duplicated,
      detectMs: null,
      recoverMs: Math.max(...resumed) - closedAt,
      detail:
        `${STEPS} steps, restart after step ${RESTART_AFTER}, 3 steps committed while down; ` +
        `clients reconnect every 100 ms with Last-Event-ID; ${expectedIds.length} events each`,
    });
  }, 180_000);
});
