// Pause and resume end to end: `anneal control-plane` and a one-slot `anneal worker` as real
// processes on the embedded engines, driven through the REST API and `anneal runs
// pause|resume`. A running SFT run pauses at a step boundary after a checkpoint and frees the
// worker's only slot (another run takes it and finishes); resumed, it continues from that
// checkpoint and ends with every step committed exactly once. Also: a queued run pauses at once,
// a paused run can be cancelled, a finished run refuses both (409 problem+json).
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunResource, StepRecord } from '@anneal/protocol';
import { createStoreContext, deleteKeysWithPrefix, readEvents } from '@anneal/store';
import { eventually } from '@anneal/testing';
import { REDIS_URL, type Server, anneal, startServer } from './cli-process.ts';

const prefix = `{anneal-pause-${randomUUID()}}`;
const token = `pause-test-token-${randomUUID()}`;
const STEPS = 40;
// Read here only (the test's own switch, not the processes' environment).
const SOAK = process.env.ANNEAL_SOAK === '1';
let plane: Server | undefined;
let worker: Server | undefined;
let url = '';
let dir = '';
let clientEnv: Record<string, string> = {};

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'anneal-pause-'));
  const common = { ANNEAL_KEY_PREFIX: prefix, REDIS_URL, ANNEAL_ARTIFACT_DIR: dir };
  const started = await startServer(
    ['control-plane', '--port', '0'],
    { ...common, ANNEAL_TOKEN: token, ANNEAL_LOG_LEVEL: 'warn' },
    /listening on (http:\/\/\S+)/,
  );
  plane = started.server;
  url = started.match[1] ?? '';
  clientEnv = { ANNEAL_URL: url, ANNEAL_TOKEN: token };
  worker = (
    await startServer(
      ['worker', '--slots', '1', '--worker-id', `pause-${randomUUID().slice(0, 8)}`],
      {
        ...common,
        ANNEAL_METRICS_PORT: '0',
        ANNEAL_LOG_LEVEL: 'warn',
        ANNEAL_HEARTBEAT_SECONDS: '1',
      },
      /anneal: worker \S+ \(pool/,
      60_000,
    )
  ).server;
}, 90_000);

afterAll(async () => {
  const codes = await Promise.all([worker?.stop(), plane?.stop()]);
  const redis = new Redis(REDIS_URL);
  await deleteKeysWithPrefix(redis, prefix);
  await redis.quit();
  if (dir) await rm(dir, { recursive: true, force: true });
  expect(codes, `worker: ${worker?.stderr()}\ncontrol plane: ${plane?.stderr()}`).toEqual([0, 0]);
}, 90_000);

async function api<T>(method: string, route: string, body?: unknown) {
  const res = await fetch(`${url}${route}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined && { 'content-type': 'application/json' }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  return {
    status: res.status,
    type: res.headers.get('content-type'),
    body: (await res.json()) as T,
  };
}

async function submit(spec: Record<string, unknown>): Promise<string> {
  const { status, body } = await api<{ id: string }>('POST', '/v1/runs', spec);
  expect(status, JSON.stringify(body)).toBe(201);
  return body.id;
}

const run = async (id: string) => (await api<RunResource>('GET', `/v1/runs/${id}`)).body;
const inState = (id: string, state: string, timeoutMs = 60_000) =>
  eventually(async () => ((await run(id)).state === state ? run(id) : null), timeoutMs, state);

/** Steps 1..steps each committed once (one record, one `step:committed` event), those up to
 * `pausedAt` by the first attempt and the rest by the second, which resumed after them. */
async function expectEachStepOnce(id: string, steps: number, pausedAt: number): Promise<void> {
  const all = Array.from({ length: steps }, (_, i) => i + 1);
  const { body: history } = await api<{ steps: StepRecord[] }>(
    'GET',
    `/v1/runs/${id}/metrics?limit=1000`,
  );
  expect(history.steps.map((s) => s.step)).toEqual(all);
  expect(history.steps.filter((s) => s.attempt === 1).map((s) => s.step)).toEqual(
    all.slice(0, pausedAt),
  );
  expect(history.steps.filter((s) => s.attempt === 2).map((s) => s.step)).toEqual(
    all.slice(pausedAt),
  );
  const redis = new Redis(REDIS_URL);
  try {
    const events = await readEvents(createStoreContext(redis, prefix), id, '0', 10_000);
    const committed = events.flatMap((e) =>
      e.event.type === 'step:committed' ? [e.event.step] : [],
    );
    expect(committed).toEqual(all);
  } finally {
    await redis.quit();
  }
}

describe('pause and resume through the REST API and the CLI (real processes)', () => {
  it('frees the slot of a paused run and resumes it exactly once', async () => {
    const long = await submit({
      kind: 'sft',
      steps: STEPS,
      batchSize: 2,
      checkpointInterval: 8,
    });
    await eventually(async () => ((await run(long)).lastStep ?? 0) >= 2, 60_000, 'step 2');

    // The slot is busy: a run submitted now waits, and pauses at once.
    const waiting = await submit({ kind: 'sft', steps: 2, batchSize: 2 });
    const pausedNow = await api<RunResource>('POST', `/v1/runs/${waiting}/pause`, {});
    expect(pausedNow.status).toBe(200);
    expect(pausedNow.body).toMatchObject({ state: 'paused', attempt: 0, pause: { by: 'user' } });

    const asked = await anneal(['runs', 'pause', long, '--reason', 'make room'], clientEnv);
    expect(asked.stdout.trim()).toBe(
      `pause requested ${long} (running; it pauses at the next step boundary)`,
    );
    const paused = await inState(long, 'paused');
    expect(paused.lastStep).toBeLessThan(STEPS);
    // Paused at a checkpointed boundary: the resume point is the last committed step.
    expect(paused.checkpoint?.step).toBe(paused.lastStep);
    const pausedAt = paused.lastStep ?? 0;
    const viaGet = await api<RunResource>('GET', `/v1/runs/${long}`);
    expect(viaGet.body.transitions?.at(-1)).toMatchObject({
      from: 'running',
      to: 'paused',
      by: 'user',
      reason: expect.stringMatching(/^paused by user: requested by .+: make room$/),
    });
    // Idempotent: pausing it again answers the paused run.
    const again = await api<RunResource>('POST', `/v1/runs/${long}/pause`, {});
    expect([again.status, again.body.state]).toEqual([200, 'paused']);

    // Its slot is free: another run starts on the only slot and finishes, and the paused run
    // stays paused (nothing re-delivers it).
    const other = await submit({ kind: 'sft', steps: 2, batchSize: 2 });
    expect((await inState(other, 'succeeded')).state).toBe('succeeded');
    expect((await run(long)).state).toBe('paused');
    // The worker's record (written each heartbeat) no longer lists it.
    await eventually(
      async () => {
        const { body } = await api<{ workers: Array<{ runs: string[] }> }>('GET', '/v1/workers');
        return body.workers.length === 1 && !body.workers.flatMap((w) => w.runs).includes(long);
      },
      10_000,
      'worker record without the paused run',
    );

    const resumed = await anneal(['runs', 'resume', long], clientEnv);
    expect(resumed.stdout.trim()).toBe(`resumed ${long} (queued)`);
    const done = await inState(long, 'succeeded', 120_000);
    expect(done.pause).toBeUndefined();

    await expectEachStepOnce(long, STEPS, pausedAt);
    const { body: full } = await api<RunResource>('GET', `/v1/runs/${long}`);
    expect(full.transitions?.map((t) => t.to)).toEqual([
      'queued',
      'running',
      'paused',
      'queued',
      'running',
      'succeeded',
    ]);

    // A paused run can be cancelled; finished runs refuse pause and resume.
    const cancelled = await api<RunResource>('POST', `/v1/runs/${waiting}/cancel`, {});
    expect([cancelled.status, cancelled.body.state]).toEqual([200, 'cancelled']);
    expect(cancelled.body.transitions?.map((t) => t.to)).toEqual(['queued', 'paused', 'cancelled']);
    for (const [id, verb] of [
      [long, 'pause'],
      [long, 'resume'],
      [waiting, 'resume'],
    ] as const) {
      const refused = await api<{ code: string; status: number }>(
        'POST',
        `/v1/runs/${id}/${verb}`,
        {},
      );
      expect(refused.status).toBe(409);
      expect(refused.type).toMatch(/^application\/problem\+json/);
      expect(refused.body.code).toBe('ANNEAL_ERR_RUN_FINISHED');
    }
  }, 240_000);

  // GRPO on the embedded engines is slower per step: `npm run soak` only.
  if (SOAK) {
    it('pauses a GRPO run at a step boundary and resumes it exactly once', async () => {
      const steps = 8;
      const id = await submit({
        kind: 'grpo',
        steps,
        checkpointInterval: 4,
        rollout: { groupSize: 2, promptsPerStep: 2, maxTokens: 16 },
      });
      await eventually(async () => ((await run(id)).lastStep ?? 0) >= 1, 120_000, 'step 1');
      const asked = await api<RunResource>('POST', `/v1/runs/${id}/pause`, {});
      expect(asked.status).toBe(202);
      const paused = await inState(id, 'paused', 120_000);
      expect(paused.checkpoint?.step).toBe(paused.lastStep);
      const resumed = await api<RunResource>('POST', `/v1/runs/${id}/resume`, {});
      expect([resumed.status, resumed.body.state]).toEqual([200, 'queued']);
      expect((await inState(id, 'succeeded', 240_000)).state).toBe('succeeded');
      await expectEachStepOnce(id, steps, paused.lastStep ?? 0);
    }, 480_000);
  }
});
