// Adapter slots as a scheduled resource (adapter-slots-script.ts) against the real Redis:
// admission, the queued reason, priority order, oversubscription, release on every path that
// releases a tenant slot (end, fail, cancel, pause, worker loss), a shared reference counted once
// and queued for unloading with its last user on each of those paths, and no more slots handed
// out than an endpoint has under many concurrent starts.
import { Redis } from 'ioredis';
import type { AdapterDemand } from '@anneal/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { REDIS_URL, type TestStore, testSpec, testStore } from '../test/helpers.ts';
import { readAdapterSlots, setAdapterCapacity } from './adapter-slots.ts';
import { createStoreContext, keys } from './context.ts';
import {
  claimSharedReference,
  sharedReferenceId,
  sharedReferenceUsers,
  takeReferenceUnloads,
} from './shared-references.ts';
import { releaseRunsOfLostWorkers } from './lost-workers.ts';
import { markPauseRequested, pauseAtBoundary } from './pause.ts';
import { createRun, getRun } from './runs.ts';
import { setTenantLimits } from './tenants.ts';
import { finishRun, releaseRun, startRun, transitionRun } from './transitions.ts';
import { heartbeatWorker } from './workers.ts';

let store: TestStore;
beforeEach(async () => {
  store = await testStore();
  await setAdapterCapacity(store.ctx, 'inference', 'qwen-8b', { slots: 8, oversubscribe: false });
});
afterEach(async () => {
  await store.cleanup();
});

const onQwen = (slots: number, reference?: string): AdapterDemand[] => [
  {
    role: 'inference',
    endpoint: 'qwen-8b',
    slots,
    detail: `test ${slots}`,
    ...(reference !== undefined && { reference }),
  },
];

async function newRun(
  slots: number,
  options: { priority?: number; tenant?: string; reference?: string } = {},
) {
  const spec = testSpec(`kind: grpo\npriority: ${options.priority ?? 50}`);
  const created = await createRun(store.ctx, {
    tenant: options.tenant ?? 'acme',
    spec,
    adapterDemand: onQwen(slots, options.reference),
  });
  if (created.status !== 'created') throw new Error('create');
  return created.run.id;
}

const held = async () => (await readAdapterSlots(store.ctx, 'inference', 'qwen-8b')).held;

describe('adapter slot admission', () => {
  it('starts a run only when its demand fits, and says what it waits for', async () => {
    const a = await newRun(6);
    expect((await startRun(store.ctx, a, 'w1')).status).toBe('started');
    const b = await newRun(3);
    const blocked = await startRun(store.ctx, b, 'w2');
    expect(blocked).toEqual({
      status: 'blocked',
      reason: `waiting for 3 adapter slots on inference endpoint 'qwen-8b': 6 of 8 held by runs ${a} (6)`,
    });
    const waiting = await getRun(store.ctx, b);
    expect(waiting).toMatchObject({
      state: 'queued',
      waitingReason: blocked.status === 'blocked' ? blocked.reason : '',
      adapterDemand: onQwen(3),
    });
    expect(await readAdapterSlots(store.ctx, 'inference', 'qwen-8b')).toEqual({
      slots: 8,
      oversubscribe: false,
      held: [{ runId: a, slots: 6 }],
      waiting: [b],
    });
    // A run that fits the 2 free slots but queued after b waits behind it (priority order).
    const c = await newRun(2);
    const behind = await startRun(store.ctx, c, 'w3');
    expect(behind.status === 'blocked' && behind.reason).toContain(
      `; 3 reserved for runs ahead in priority order: ${b} (3)`,
    );
    // A higher-priority run is ahead of b: it takes the 2 free slots.
    const urgent = await newRun(2, { priority: 90 });
    expect((await startRun(store.ctx, urgent, 'w4')).status).toBe('started');
    await finishRun(store.ctx, a, { state: 'succeeded', reason: 'done' }, 'w1');
    expect((await startRun(store.ctx, b, 'w2')).status).toBe('started');
    expect((await startRun(store.ctx, c, 'w3')).status).toBe('started');
    expect((await getRun(store.ctx, b))?.waitingReason).toBeUndefined();
    expect(await held()).toEqual(
      [
        { runId: b, slots: 3 },
        { runId: c, slots: 2 },
        { runId: urgent, slots: 2 },
      ].sort((x, y) => x.runId.localeCompare(y.runId)),
    );
  });

  it('admits past the capacity on an endpoint that allows oversubscription', async () => {
    await setAdapterCapacity(store.ctx, 'inference', 'qwen-8b', { slots: 8, oversubscribe: true });
    const a = await newRun(6);
    const b = await newRun(6);
    expect((await startRun(store.ctx, a, 'w1')).status).toBe('started');
    expect((await startRun(store.ctx, b, 'w2')).status).toBe('started');
    expect((await held()).reduce((sum, h) => sum + h.slots, 0)).toBe(12);
  });

  it('checks the tenant cap first: a run at its cap takes no place in the slot queue', async () => {
    await setTenantLimits(store.ctx, 'acme', { maxConcurrentRuns: 1 });
    const a = await newRun(6);
    expect((await startRun(store.ctx, a, 'w1')).status).toBe('started');
    const b = await newRun(3);
    const blocked = await startRun(store.ctx, b, 'w2');
    expect(blocked.status === 'blocked' && blocked.reason).toContain('at its limit of 1');
    expect((await readAdapterSlots(store.ctx, 'inference', 'qwen-8b')).waiting).toEqual([]);
  });
});

describe('shared references', () => {
  it('one id per tenant and starting weights, unguessable, never another tenant’s', async () => {
    const id = await sharedReferenceId(store.ctx, 'acme', '{"base":"qwen"}');
    expect(id).toMatch(/^ref-[0-9a-f]{16}$/);
    expect(await sharedReferenceId(store.ctx, 'acme', '{"base":"qwen"}')).toBe(id);
    expect(await sharedReferenceId(store.ctx, 'acme', '{"base":"llama"}')).not.toBe(id);
    expect(await sharedReferenceId(store.ctx, 'globex', '{"base":"qwen"}')).not.toBe(id);
  });

  it('counts the reference once: a second run from the same start needs one slot fewer', async () => {
    await setAdapterCapacity(store.ctx, 'inference', 'qwen-8b', { slots: 7, oversubscribe: false });
    const reference = await sharedReferenceId(store.ctx, 'acme', 'start');
    const a = await newRun(4, { reference });
    const b = await newRun(4, { reference });
    expect((await startRun(store.ctx, a, 'w1')).status).toBe('started');
    // 3 free: b fits only because a already holds the reference.
    expect(await startRun(store.ctx, b, 'w2')).toMatchObject({ status: 'started' });
    expect((await held()).reduce((sum, h) => sum + h.slots, 0)).toBe(7);
    // Another start (or another tenant's reference) pays its own slot, and the reason names no
    // reference id.
    const other = await newRun(4, { reference: await sharedReferenceId(store.ctx, 'acme', 'x') });
    const blocked = await startRun(store.ctx, other, 'w3');
    expect(blocked.status === 'blocked' && blocked.reason).toMatch(
      /^waiting for 4 adapter slots on inference endpoint 'qwen-8b': 7 of 7 held by runs run_\w+ \(3\), run_\w+ \(3\) and 1 shared reference \(1 each\)$/,
    );
    expect(blocked.status === 'blocked' && blocked.reason).not.toContain(reference);
    // Both users load one adapter from the path offered first.
    const claim = (runId: string, path: string) =>
      claimSharedReference(store.ctx, { endpoint: 'qwen-8b', reference, runId, path });
    expect(await claim(b, '/b')).toEqual({ adapter: `${reference}@shared.1`, path: '/b' });
    expect(await claim(a, '/a')).toEqual({ adapter: `${reference}@shared.1`, path: '/b' });
    expect(await claim(other, '/o')).toBeNull(); // not a user
    // The first user leaving keeps the reference (and its slot) for the second.
    await finishRun(store.ctx, a, { state: 'succeeded', reason: 'done' }, 'w1');
    expect(await held()).toContainEqual({ runId: `reference:${reference}`, slots: 1 });
    expect(await takeReferenceUnloads(store.ctx, 'qwen-8b')).toEqual([]);
    expect((await startRun(store.ctx, other, 'w3')).status).toBe('blocked'); // 3 + 1 + 4 > 7
    await finishRun(store.ctx, b, { state: 'succeeded', reason: 'done' }, 'w2');
    expect(await takeReferenceUnloads(store.ctx, 'qwen-8b')).toEqual([
      { adapter: `${reference}@shared.1`, path: '/b' },
    ]);
    // A later user starts a new generation: a name never loaded before, its own path.
    await transitionRun(store.ctx, other, { to: 'cancelled', reason: 'user' });
    const c = await newRun(4, { reference });
    expect((await startRun(store.ctx, c, 'w1')).status).toBe('started');
    expect(await claim(c, '/c')).toEqual({ adapter: `${reference}@shared.2`, path: '/c' });
  });
});

describe('adapter slots are given back', () => {
  /** Fills the endpoint with `a`, proves `b` waits, runs `release` on `a`, proves `b` starts. */
  async function releasedBy(release: (a: string) => Promise<unknown>): Promise<void> {
    const reference = await sharedReferenceId(store.ctx, 'acme', 'start');
    const a = await newRun(6, { reference });
    await heartbeatWorker(store.ctx, {
      id: 'w1',
      pool: 'default',
      slots: 1,
      busy: 1,
      runs: [a],
      startedAt: new Date().toISOString(),
    });
    expect((await startRun(store.ctx, a, 'w1')).status).toBe('started');
    expect(await held()).toEqual(
      [
        { runId: a, slots: 5 },
        { runId: `reference:${reference}`, slots: 1 },
      ].sort((x, y) => x.runId.localeCompare(y.runId)),
    );
    const claim = { endpoint: 'qwen-8b', reference, runId: a, path: '/ckpt/a-ref' };
    expect(await claimSharedReference(store.ctx, claim)).toEqual({
      adapter: `${reference}@shared.1`,
      path: '/ckpt/a-ref',
    });
    const b = await newRun(3);
    expect((await startRun(store.ctx, b, 'w2')).status).toBe('blocked');
    await release(a);
    expect(await held()).toEqual([]);
    // The reference left with its last user: queued for unloading, by the name that was loaded.
    expect(await sharedReferenceUsers(store.ctx, 'qwen-8b', reference)).toEqual([]);
    expect(await takeReferenceUnloads(store.ctx, 'qwen-8b')).toEqual([
      { adapter: `${reference}@shared.1`, path: '/ckpt/a-ref' },
    ]);
    expect(await takeReferenceUnloads(store.ctx, 'qwen-8b')).toEqual([]); // taken once
    expect((await startRun(store.ctx, b, 'w2')).status).toBe('started');
    expect(await held()).toEqual([{ runId: b, slots: 3 }]);
  }

  it('when the run succeeds', () =>
    releasedBy((a) => finishRun(store.ctx, a, { state: 'succeeded', reason: 'done' }, 'w1')));

  it('when the run fails', () =>
    releasedBy((a) =>
      finishRun(store.ctx, a, { state: 'failed', reason: 'trainer', error: '500' }, 'w1'),
    ));

  it('when the run is cancelled', () =>
    releasedBy((a) => finishRun(store.ctx, a, { state: 'cancelled', reason: 'user' }, 'w1')));

  it('when the run is handed back for a retry (drain, error with attempts left)', () =>
    releasedBy((a) => releaseRun(store.ctx, a, 'released by draining worker w1')));

  it('when the run pauses at a step boundary', () =>
    releasedBy(async (a) => {
      const cause = { by: 'user' as const, reason: 'look at it' };
      expect(await markPauseRequested(store.ctx, a, cause, { attempt: 1 })).toBe('requested');
      expect(await pauseAtBoundary(store.ctx, a, { workerId: 'w1', attempt: 1 })).toMatchObject({
        status: 'ok',
      });
    }));

  it('when the run loses its worker (heartbeat expired)', () =>
    releasedBy(async (a) => {
      await store.ctx.redis.del(keys(store.prefix).worker('w1'));
      expect(await releaseRunsOfLostWorkers(store.ctx, ['acme'])).toEqual([
        { runId: a, workerId: 'w1' },
      ]);
    }));

  it('a waiting run that is cancelled or paused leaves the queue and reserves nothing', async () => {
    const a = await newRun(6);
    expect((await startRun(store.ctx, a, 'w1')).status).toBe('started');
    const big = await newRun(4);
    expect((await startRun(store.ctx, big, 'w2')).status).toBe('blocked');
    const other = await newRun(3);
    expect((await startRun(store.ctx, other, 'w2')).status).toBe('blocked');
    expect((await readAdapterSlots(store.ctx, 'inference', 'qwen-8b')).waiting).toEqual([
      big,
      other,
    ]);
    await transitionRun(store.ctx, big, { to: 'cancelled', reason: 'user' });
    await transitionRun(store.ctx, other, { to: 'paused', reason: 'user', by: 'user' });
    expect((await readAdapterSlots(store.ctx, 'inference', 'qwen-8b')).waiting).toEqual([]);
    const small = await newRun(2);
    expect((await startRun(store.ctx, small, 'w3')).status).toBe('started');
  });
});

describe('adapter slots under concurrency', () => {
  it('never hands out more slots than the endpoint has, whatever the interleaving', async () => {
    const clients = Array.from({ length: 8 }, () => new Redis(REDIS_URL));
    try {
      const ctxs = clients.map((c) => createStoreContext(c, store.prefix));
      const runs = await Promise.all(Array.from({ length: 24 }, (_, i) => newRun(1 + (i % 3))));
      const running = new Set<string>();
      // Rounds: every waiting run tries to start at once from 8 connections; then the runs that
      // started end, and the next round begins. Each round's holds must fit in 8 slots.
      let rounds = 0;
      while (running.size < runs.length && rounds < 30) {
        rounds += 1;
        const waiting = runs.filter((id) => !running.has(id));
        const results = await Promise.all(
          waiting.map((id, i) => startRun(ctxs[i % ctxs.length]!, id, `w${i}`)),
        );
        const started = waiting.filter((_, i) => results[i]?.status === 'started');
        const holds = await held();
        const total = holds.reduce((sum, h) => sum + h.slots, 0);
        expect(total).toBeLessThanOrEqual(8);
        expect(holds.map((h) => h.runId).sort()).toEqual([...started].sort());
        expect(started.length).toBeGreaterThan(0);
        for (const id of started) running.add(id);
        await Promise.all(
          started.map((id) => finishRun(store.ctx, id, { state: 'succeeded', reason: 'ok' })),
        );
      }
      expect(running.size).toBe(runs.length);
      expect(await held()).toEqual([]);
    } finally {
      await Promise.all(clients.map((c) => c.quit()));
    }
  });
});
