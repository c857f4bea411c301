// The fair-share script (fair-share-script.ts) against the real Redis: weighted allocations,
// work conservation, the endpoint's capacity under concurrent asks from many connections,
// expiry of a dead holder's lease and the served counters.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type TestStore, eventually, testSpec, testStore } from '../test/helpers.ts';
import { createStoreContext } from './context.ts';
import { createRun, getRun } from './runs.ts';
import {
  type FairShareAsk,
  acquireFairShare,
  fairShareLeaseId,
  readFairShare,
  releaseFairShare,
} from './fair-share.ts';

let store: TestStore;
beforeEach(async () => {
  store = await testStore();
});
afterEach(async () => {
  await store.cleanup();
});

let next = 0;
const ask = (runId: string, weight: number, queued: number, units = 1): FairShareAsk => ({
  capacity: 8,
  runId,
  weight,
  waiterId: `w-${runId}`,
  units: [units],
  queued,
  leasePrefix: `l-${runId}-${next++}`,
});

/** Asks for `runId` until it is refused; returns how many leases it got. */
async function fill(runId: string, weight: number, queued: number): Promise<number> {
  let granted = 0;
  while (
    (await acquireFairShare(store.ctx, 'gen', ask(runId, weight, queued - granted))).granted > 0
  )
    granted += 1;
  return granted;
}

describe('fair share of an endpoint', () => {
  it('splits the capacity by weight among runs that want more than their share', async () => {
    // Both register as waiting first, then fill up to their allocations.
    await acquireFairShare(store.ctx, 'gen', { ...ask('run_b', 1, 100), units: [9] });
    expect(await fill('run_a', 3, 100)).toBe(6);
    expect(await fill('run_b', 1, 100)).toBe(2);
    const answer = await acquireFairShare(store.ctx, 'gen', ask('run_a', 3, 94));
    expect(answer).toEqual({ granted: 0, allocation: 6, held: 8 });
  });

  it("grants as many of a waiter's queued requests as fit its allocation in one ask", async () => {
    await acquireFairShare(store.ctx, 'gen', { ...ask('run_b', 1, 100), units: [9] });
    const batch = { ...ask('run_a', 1, 10), units: [2, 1, 1, 1, 1] };
    expect(await acquireFairShare(store.ctx, 'gen', batch)).toEqual({
      granted: 3, // 2 + 1 + 1 = its 4 of 8
      allocation: 4,
      held: 4,
    });
    const leases = await store.redis.zrange(`${store.prefix}:fair:gen:leases`, 0, -1);
    expect(leases.sort()).toEqual([1, 2, 3].map((i) => fairShareLeaseId(batch.leasePrefix, i)));
  });

  it('a run that wants less than its share leaves the rest to the others (work-conserving)', async () => {
    await acquireFairShare(store.ctx, 'gen', { ...ask('run_big', 1, 100), units: [9] });
    expect(await fill('run_small', 1, 1)).toBe(1); // wants 1 of its 4
    expect(await fill('run_big', 1, 100)).toBe(7); // gets the other 7
  });

  it('a run holding nothing may take one request larger than its share, if the endpoint has room', async () => {
    await acquireFairShare(store.ctx, 'gen', { ...ask('run_b', 1, 1), units: [9] });
    // Weights 15:1 of 8: run_b's share is half a sequence, run_a's 7.5.
    expect(await fill('run_a', 15, 100)).toBe(7);
    expect((await acquireFairShare(store.ctx, 'gen', ask('run_b', 1, 1))).granted).toBe(1);
    // Holding one, run_b waits: its share is spent (and the endpoint is full).
    expect((await acquireFairShare(store.ctx, 'gen', ask('run_b', 1, 1))).granted).toBe(0);
  });

  it('never holds more than the capacity under concurrent asks from many connections', async () => {
    const contexts = Array.from({ length: 8 }, () =>
      createStoreContext(store.connection(), store.prefix),
    );
    const answers = await Promise.all(
      contexts.flatMap((ctx, c) =>
        Array.from({ length: 10 }, () =>
          acquireFairShare(ctx, 'gen', { ...ask(`run_${c % 3}`, 1 + (c % 3), 50), capacity: 8 }),
        ),
      ),
    );
    expect(answers.filter((a) => a.granted > 0)).toHaveLength(8);
    expect(Math.max(...answers.map((a) => a.held))).toBe(8);
    const held = (await readFairShare(store.ctx, 'gen')).reduce((sum, r) => sum + r.held, 0);
    expect(held).toBe(8);
  });

  it("a dead holder's lease expires; a released one is counted as served", async () => {
    const dead = { ...ask('run_dead', 1, 1), capacity: 1, ttlMs: 200 };
    expect((await acquireFairShare(store.ctx, 'gen', dead)).granted).toBe(1);
    const live = { ...ask('run_live', 1, 1), capacity: 1 };
    expect((await acquireFairShare(store.ctx, 'gen', live)).granted).toBe(0);
    // Nobody renews run_dead's lease: once its TTL has passed, the next ask reaps it.
    await eventually(async () => (await acquireFairShare(store.ctx, 'gen', live)).granted);
    const gone = {
      runId: 'run_dead',
      leaseId: fairShareLeaseId(dead.leasePrefix, 1),
      tokens: 5,
      waitedMs: 1,
    };
    expect(await releaseFairShare(store.ctx, 'gen', gone)).toBe(false);
    const done = {
      runId: 'run_live',
      leaseId: fairShareLeaseId(live.leasePrefix, 1),
      tokens: 12,
      waitedMs: 250,
    };
    expect(await releaseFairShare(store.ctx, 'gen', done)).toBe(true);
    const runs = await readFairShare(store.ctx, 'gen');
    expect(runs.find((r) => r.runId === 'run_live')).toMatchObject({
      held: 0,
      requests: 1,
      units: 1,
      tokens: 12,
      waitedSeconds: 0.25,
    });
    expect(runs.find((r) => r.runId === 'run_dead')).toBeUndefined();
  });

  it("keeps each run's share of the endpoint's tokens on its record (fleetShare)", async () => {
    const ids: string[] = [];
    for (const _ of [0, 1]) {
      const created = await createRun(store.ctx, { tenant: 'acme', spec: testSpec('kind: grpo') });
      if (created.status !== 'created') throw new Error(created.status);
      ids.push(created.run.id);
    }
    const [a, b] = ids as [string, string];
    const serve = async (runId: string, weight: number, tokens: number) => {
      const lease = ask(runId, weight, 1);
      expect((await acquireFairShare(store.ctx, 'gen', lease)).granted).toBe(1);
      const leaseId = fairShareLeaseId(lease.leasePrefix, 1);
      await releaseFairShare(store.ctx, 'gen', { runId, leaseId, tokens, waitedMs: 100 });
    };
    await serve(a, 3, 300);
    await serve(b, 1, 100);
    await serve(a, 3, 300);
    await serve(b, 1, 100);
    const shareOf = async (id: string) => (await getRun(store.ctx, id))?.fleetShare?.['gen'];
    // As of each run's last request: a 600 of the 700 served since its first request; b 200 of
    // the 500 since its own.
    expect(await shareOf(a)).toMatchObject({
      weight: 3,
      requests: 2,
      tokens: 600,
      waitedSeconds: 0.2,
    });
    expect((await shareOf(a))?.tokenShare).toBeCloseTo(600 / 700, 12); // Lua's cjson: 14 digits
    expect((await shareOf(b))?.tokenShare).toBe(0.4);
  });
});
