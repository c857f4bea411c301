// Acknowledged writes against a private primary and replica (@anneal/testing's startRedisServer; never the
// shared test Redis): WAIT confirms each one, a replica that falls behind (SIGSTOP) turns an
// acknowledgement into NotReplicatedError, a reconnect between a write and its WAIT re-sends
// the write, and after the primary is killed and the replica promoted every acknowledged write
// is there. A reader's fence (SSE) says whether what it read is on the replica.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { eventually, testSpec } from '../test/helpers.ts';
import {
  type RedisServer as PrivateRedis,
  redisServerBinary,
  startRedisServer,
} from '@anneal/testing';
import { backUpReplication, replicaInSync } from '../test/replicas.ts';

/** A private redis-server whose append-only file is fsynced on every write. */
const startPrivateRedis = (binary: string, args: string[] = []) =>
  startRedisServer({ binary, args: ['--appendonly', 'yes', '--appendfsync', 'always', ...args] });
import { type StoreContext, createStoreContext, keys } from './context.ts';
import { readGeneration, replicatedSince } from './durable.ts';
import { readEvents } from './events.ts';
import { NotReplicatedError, replicationGuard } from './replication.ts';
import { createRun, getRun } from './runs.ts';
import { appendStep, readSteps } from './steps.ts';
import { getCheckpoint, setCheckpoint } from './checkpoints.ts';
import { finishRun, startRun } from './transitions.ts';

let primary: PrivateRedis;
let replica: PrivateRedis;
const clients: Redis[] = [];

function client(url: string): Redis {
  const c = new Redis(url, { maxRetriesPerRequest: null });
  c.on('error', () => {});
  clients.push(c);
  return c;
}

/** A store on the private primary whose acknowledged writes wait for `replicas`. A short WAIT
 * timeout only where a test expects the replica not to confirm (it is paused). */
function durableStore(
  replicas: 'auto' | number,
  { timeoutMs = 5000, retryForMs = 0 }: { timeoutMs?: number; retryForMs?: number } = {},
): StoreContext {
  return createStoreContext(client(primary.url), `{anneal-repl-${randomUUID()}}`, {
    durable: {
      redis: client(primary.url),
      replication: { replicas, timeoutMs, retryForMs, probeMs: 50 },
    },
  });
}

async function runningRun(ctx: StoreContext): Promise<string> {
  const created = await createRun(ctx, { tenant: 't', spec: testSpec('kind: sft') });
  if (created.status !== 'created') throw new Error('create');
  const started = await startRun(ctx, created.run.id, 'w1');
  if (started.status !== 'started') throw new Error('start');
  return created.run.id;
}

/** The replica's view of a key (it answers reads). */
const onReplica = () => client(replica.url);

beforeAll(async () => {
  const binary = redisServerBinary();
  if (!binary)
    throw new Error('redis-server is not on PATH (Debian: apt-get install redis-server)');
  primary = await startPrivateRedis(binary, ['--repl-diskless-sync-delay', '0']);
  replica = await startPrivateRedis(binary, ['--replicaof', '127.0.0.1', String(primary.port)]);
  await eventually(() => replicaInSync(primary, replica), 30_000);
}, 60_000);

afterAll(async () => {
  for (const c of clients) c.disconnect();
  await replica?.stop();
  await primary?.stop();
});

describe('acknowledged writes wait for the replica', () => {
  beforeEach(async () => {
    await eventually(() => replicaInSync(primary, replica), 10_000);
  });

  it('a submission, a start, a step and a checkpoint are on the replica when acknowledged', async () => {
    const ctx = durableStore('auto');
    const runId = await runningRun(ctx);
    expect((await appendStep(ctx, runId, 1, { loss: 1 })).status).toBe('committed');
    expect(await setCheckpoint(ctx, runId, { step: 1, path: '/c1' })).toBe('saved');
    // Read from the replica at once: WAIT returned only after it applied these writes.
    const mirror = createStoreContext(onReplica(), ctx.prefix);
    expect((await getRun(mirror, runId))?.state).toBe('running');
    expect((await readSteps(mirror, runId)).map((s) => s.step)).toEqual([1]);
    expect((await getCheckpoint(mirror, runId))?.step).toBe(1);
  });

  it('a replica that falls behind: the write is not acknowledged (NotReplicatedError)', async () => {
    const ctx = durableStore('auto', { timeoutMs: 300 });
    const runId = await runningRun(ctx);
    replica.pause();
    try {
      const error = await appendStep(ctx, runId, 1, { loss: 1 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(NotReplicatedError);
      expect((error as NotReplicatedError).message).toMatch(
        /step 1 of run .*confirmed by 0 of 1 replica\(s\) within 300 ms/,
      );
      // A submission is refused the same way (the control plane answers 503, not 201).
      await expect(createRun(ctx, { tenant: 't', spec: testSpec('kind: sft') })).rejects.toThrow(
        NotReplicatedError,
      );
    } finally {
      replica.resume();
    }
    // The primary did take it: sent again once the replica is back, it is confirmed.
    await eventually(() => replicaInSync(primary, replica), 10_000);
    expect((await appendStep(ctx, runId, 1, { loss: 1 })).status).toBe('duplicate');
  });

  it("auto keeps waiting for a primary's replica whose link is down (no unreplicated window)", async () => {
    const ctx = durableStore('auto', { timeoutMs: 300 });
    const runId = await runningRun(ctx); // confirmed: this primary has a replica
    replica.pause();
    try {
      await client(primary.url).client('KILL', 'TYPE', 'replica');
      await eventually(async () =>
        /connected_slaves:0/.test(await client(primary.url).info('replication')),
      );
      await expect(appendStep(ctx, runId, 1, { loss: 1 })).rejects.toThrow(NotReplicatedError);
    } finally {
      replica.resume();
    }
    await eventually(() => replicaInSync(primary, replica), 10_000);
    expect((await appendStep(ctx, runId, 1, { loss: 1 })).status).toBe('duplicate');
  });

  it('with a retry budget, a write waits out a replica that is back within it', async () => {
    const ctx = durableStore('auto', { timeoutMs: 300, retryForMs: 60_000 });
    const runId = await runningRun(ctx);
    replica.pause();
    const commit = appendStep(ctx, runId, 1, { loss: 1 });
    // Not confirmed while the replica is stopped: still pending after two WAIT timeouts.
    const early = await Promise.race([
      commit.then(() => 'settled'),
      new Promise((resolve) => setTimeout(() => resolve('pending'), 700)),
    ]);
    replica.resume();
    expect(early).toBe('pending');
    // The first reply ('committed') is kept although the re-sent write found a duplicate.
    expect((await commit).status).toBe('committed');
  });

  it('replicas: 1 with no replica: never acknowledged', async () => {
    const lone = await startPrivateRedis(redisServerBinary()!);
    try {
      const ctx = createStoreContext(client(lone.url), `{anneal-repl-${randomUUID()}}`, {
        durable: { replication: { replicas: 1, timeoutMs: 100 } },
      });
      await expect(createRun(ctx, { tenant: 't', spec: testSpec('kind: sft') })).rejects.toThrow(
        /confirmed by 0 of 1 replica/,
      );
      // auto with no replica: acknowledged as soon as the primary has it.
      const auto = createStoreContext(client(lone.url), `{anneal-repl-${randomUUID()}}`, {
        durable: { redis: client(lone.url), replication: { replicas: 'auto', timeoutMs: 100 } },
      });
      expect((await createRun(auto, { tenant: 't', spec: testSpec('kind: sft') })).status).toBe(
        'created',
      );
    } finally {
      await lone.stop();
    }
  });

  it('a reconnect between a write and its WAIT re-sends the write (the first WAIT proved nothing)', async () => {
    const ctx = durableStore('auto');
    const runId = await runningRun(ctx);
    const durable = ctx.durable!;
    const killer = client(primary.url);
    const id = Number(await durable.redis.client('ID'));
    let sent = 0;
    const reply = await durable.guard.confirm(
      'test write',
      async () => {
        sent += 1;
        const result = await durable.redis.hincrby(keys(ctx.prefix).run(runId), 'probe', 1);
        // The connection that wrote dies before the WAIT: ioredis sends WAIT on a new one.
        if (sent === 1) await killer.client('KILL', 'ID', String(id));
        return result;
      },
      (first) => first,
    );
    expect(sent).toBe(2);
    expect(reply).toBe(1); // merge kept the first reply
  });
  it('a reconnect after a write to a primary with no replica to wait for re-sends it (a failover to the last replica)', async () => {
    // The primary took the write and died; the promoted replica has none of its own (auto: need
    // 0). The first reply proves nothing about the new primary, so the write goes again.
    const lone = await startPrivateRedis(redisServerBinary()!);
    try {
      const durable = client(lone.url);
      const ctx = createStoreContext(client(lone.url), `{anneal-repl-${randomUUID()}}`, {
        durable: { redis: durable, replication: { replicas: 'auto', timeoutMs: 100 } },
      });
      const killer = client(lone.url);
      const id = Number(await durable.client('ID'));
      let sent = 0;
      await ctx.durable!.guard.confirm('test write', async () => {
        sent += 1;
        const result = await durable.incr(`${ctx.prefix}:probe`);
        if (sent === 1) {
          const closed = new Promise((resolve) => durable.once('close', resolve));
          await killer.client('KILL', 'ID', String(id));
          await closed;
        }
        return result;
      });
      expect(sent).toBe(2);
      // A reader's fence across the same kind of reconnect: what it read is not vouched for.
      const reader = client(lone.url);
      const since = readGeneration(ctx, reader);
      const readerId = Number(await reader.client('ID'));
      const closed = new Promise((resolve) => reader.once('close', resolve));
      await killer.client('KILL', 'ID', String(readerId));
      await closed;
      expect(await replicatedSince(ctx, reader, since)).toBe(false);
      expect(await replicatedSince(ctx, reader, readGeneration(ctx, reader))).toBe(true);
    } finally {
      await lone.stop();
    }
  });
});

describe('checks against lost acknowledged data', () => {
  it('appendStep refuses a step whose predecessor the run no longer holds (gap)', async () => {
    const ctx = durableStore('auto');
    const runId = await runningRun(ctx);
    await appendStep(ctx, runId, 1, { loss: 1 });
    await appendStep(ctx, runId, 2, { loss: 1 }, { previous: 1 });
    // As after a failover that lost steps 3 and 4: the worker goes on with step 5.
    expect(await appendStep(ctx, runId, 5, { loss: 1 }, { previous: 4 })).toEqual({
      status: 'gap',
      lastStep: 2,
    });
    expect((await readSteps(ctx, runId)).map((s) => s.step)).toEqual([1, 2]);
  });

  it('a checkpoint pointer only at a committed step, and the same pointer twice is one event', async () => {
    const ctx = durableStore('auto');
    const runId = await runningRun(ctx);
    await appendStep(ctx, runId, 1, { loss: 1 });
    expect(await setCheckpoint(ctx, runId, { step: 3, path: '/c3' }, { requireStep: true })).toBe(
      'uncommitted',
    );
    expect(await setCheckpoint(ctx, runId, { step: 1, path: '/c1' }, { requireStep: true })).toBe(
      'saved',
    );
    expect(await setCheckpoint(ctx, runId, { step: 1, path: '/c1' })).toBe('saved');
    const saved = (await readEvents(ctx, runId)).filter((e) => e.event.type === 'checkpoint:saved');
    expect(saved).toHaveLength(1);
  });

  it('a run with a hole in its steps cannot succeed (completeSteps guard)', async () => {
    const ctx = durableStore('auto');
    const runId = await runningRun(ctx);
    for (const step of [1, 2, 4]) await appendStep(ctx, runId, step, { loss: 1 });
    const { transitionRun } = await import('./transitions.ts');
    expect(
      await transitionRun(ctx, runId, {
        to: 'succeeded',
        from: ['running'],
        reason: 'done',
        guard: { completeSteps: true },
      }),
    ).toEqual({ status: 'incomplete', state: 'running', count: 3, lastStep: 4 });
    await appendStep(ctx, runId, 3, { loss: 1 });
    // Steps 1..4 without a hole, but the writer committed 6: the last two are gone.
    expect(
      await transitionRun(ctx, runId, {
        to: 'succeeded',
        from: ['running'],
        reason: 'done',
        guard: { completeSteps: 6 },
      }),
    ).toEqual({ status: 'incomplete', state: 'running', count: 4, lastStep: 4 });
    expect(
      (
        await transitionRun(ctx, runId, {
          to: 'succeeded',
          from: ['running'],
          reason: 'done',
          guard: { completeSteps: true },
        })
      ).status,
    ).toBe('ok');
    expect((await finishRun(ctx, runId, { state: 'failed', reason: 'x' })).status).toBe('conflict');
  });
});

describe('a reader fence (SSE)', () => {
  it('confirms what was read once the replica has it; not while the replica lags', async () => {
    await eventually(() => replicaInSync(primary, replica), 10_000);
    const ctx = durableStore('auto', { timeoutMs: 1000 });
    const runId = await runningRun(ctx);
    const reader = client(primary.url);
    const since = readGeneration(ctx, reader);
    await readEvents(createStoreContext(reader, ctx.prefix), runId);
    expect(await replicatedSince(ctx, reader, since)).toBe(true);
    replica.pause();
    try {
      expect(await replicatedSince(ctx, reader, readGeneration(ctx, reader))).toBe(false);
    } finally {
      replica.resume();
    }
    // A reconnect since the read: not confirmed (what it read may have come from another server).
    const before = readGeneration(ctx, reader);
    await client(primary.url).client('KILL', 'ID', String(await reader.client('ID')));
    const guard = replicationGuard(reader, ctx.durable!.guard.options);
    await eventually(() => guard.generation > before, 5000);
    expect(await replicatedSince(ctx, reader, before)).toBe(false);
    expect(await replicatedSince(ctx, reader, guard.generation)).toBe(true);
  });
});

describe('failover: the primary dies, the replica is promoted', () => {
  it('keeps every acknowledged write, whatever the replica had not confirmed', async () => {
    await eventually(() => replicaInSync(primary, replica), 10_000);
    const ctx = durableStore('auto', { timeoutMs: 1000 });
    const runId = await runningRun(ctx);
    const acknowledged: number[] = [];
    for (let step = 1; step <= 5; step++) {
      await appendStep(ctx, runId, step, { loss: step }, step > 1 ? { previous: step - 1 } : {});
      acknowledged.push(step);
    }
    await setCheckpoint(ctx, runId, { step: 4, path: '/c4' }, { requireStep: true });
    // The replica falls behind: what the primary takes now never reaches it …
    replica.pause();
    await backUpReplication(primary);
    // … and is not acknowledged.
    const refused = await appendStep(ctx, runId, 6, { loss: 6 }, { previous: 5 }).catch(
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(NotReplicatedError);
    await primary.kill();
    replica.resume();
    const promoted = client(replica.url);
    await promoted.replicaof('NO', 'ONE');
    const after = createStoreContext(promoted, ctx.prefix);
    const steps = (await readSteps(after, runId)).map((s) => s.step);
    expect(steps).toEqual(acknowledged); // step 6 died with the primary: it was never acknowledged
    expect((await getRun(after, runId))?.state).toBe('running');
    expect((await getCheckpoint(after, runId))?.step).toBe(4);
  });
});
