// A control-plane restart mid-run loses nothing: all truth is in Redis.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRun } from '@anneal/store';
import { parseRunSpec } from '@anneal/protocol';
import { TOKENS, type TestPlane, auth, eventually, submit, testPlane } from './helpers.ts';
import { TestWorker } from './test-worker.ts';

let plane: TestPlane;
let worker: TestWorker;
beforeEach(async () => {
  plane = await testPlane();
  worker = await new TestWorker({ prefix: plane.prefix, holdAtStep: 3 }).start();
});
afterEach(async () => {
  await worker.close();
  await plane.cleanup();
});

const get = (url: string) =>
  plane.app.inject({ method: 'GET', url, headers: auth(TOKENS.acmeViewer) });

describe('control-plane restart', () => {
  it('keeps runs, steps, events and idempotency keys across a restart mid-run', async () => {
    const submitted = await submit(plane.app, 'kind: sft\nsteps: 5', {
      idempotencyKey: 'restart-key',
    });
    const id = submitted.json().id;
    await eventually(() => worker.isHeld(id));
    const before = (await get(`/v1/runs/${id}`)).json();

    await plane.restart();

    const after = (await get(`/v1/runs/${id}`)).json();
    expect(after).toEqual(before);
    expect(after).toMatchObject({ state: 'running', lastStep: 2 });
    const replay = await submit(plane.app, 'kind: sft\nsteps: 5', {
      idempotencyKey: 'restart-key',
    });
    expect(replay.statusCode).toBe(200);
    expect(replay.json().id).toBe(id);

    worker.release(id);
    await eventually(async () => (await get(`/v1/runs/${id}`)).json().state === 'succeeded');
    const steps = (await get(`/v1/runs/${id}/metrics`))
      .json()
      .steps.map((s: { step: number }) => s.step);
    expect(steps).toEqual([1, 2, 3, 4, 5]);
  });

  it('enqueues on start-up a run whose job a crash kept from BullMQ', async () => {
    const parsed = parseRunSpec('kind: sft\nsteps: 1');
    if (!parsed.ok) throw new Error('spec');
    const orphan = await createRun(plane.store, {
      tenant: 'acme',
      spec: { ...parsed.value, pool: 'default' },
    });
    if (orphan.status !== 'created') throw new Error('create');
    expect(await plane.redis.exists(`${plane.prefix}:bull:pool-default:${orphan.run.id}`)).toBe(0);
    expect(await plane.redis.zrange(`${plane.prefix}:outbox`, 0, -1)).toContain(orphan.run.id);
    await plane.restart();
    await eventually(() => worker.isHeld(orphan.run.id) || worker.started.includes(orphan.run.id));
  });
});
