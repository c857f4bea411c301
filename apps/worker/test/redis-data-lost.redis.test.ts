// What a worker does when Redis loses writes it had acknowledged — as after a failover that
// promoted a replica which was behind (no WAIT, or no replica to wait for): the whole keyspace
// of the test's prefix (store and BullMQ keys) goes back to a snapshot taken earlier, from
// inside the executor so that the moment is exact. The worker notices at its next write (a step
// whose predecessor is gone, a start Redis no longer has, a history with a hole when the run
// would succeed), says so with a `run:notice` (redis_data_lost), and the run resumes from what
// Redis holds: every step recorded once, never a `succeeded` run with holes.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { getRun, getTransitions, readEvents, readSteps } from '@anneal/store';
import type { Executor, ExecutorResult } from '../src/index.ts';
import { type TestEnv, eventually, testEnv } from './helpers.ts';

let env: TestEnv;
beforeEach(async () => {
  env = await testEnv();
});
afterEach(async () => {
  await env.cleanup();
});

type Snapshot = Map<string, { dump: Buffer; ttl: number }>;

async function prefixKeys(redis: Redis, prefix: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    found.push(...batch);
  } while (cursor !== '0');
  return found;
}

/** Every key of the prefix as DUMP + PTTL (what a replica at this point would hold). */
async function snapshot(redis: Redis, prefix: string): Promise<Snapshot> {
  const out: Snapshot = new Map();
  for (const key of await prefixKeys(redis, prefix)) {
    const dump = await redis.dumpBuffer(key);
    if (dump) out.set(key, { dump, ttl: Math.max(0, await redis.pttl(key)) });
  }
  return out;
}

/** The keyspace back at `snap`, atomically: keys made since are deleted, the rest restored. */
async function failBackTo(redis: Redis, prefix: string, snap: Snapshot): Promise<void> {
  const tx = redis.multi();
  for (const key of await prefixKeys(redis, prefix)) if (!snap.has(key)) tx.del(key);
  for (const [key, { dump, ttl }] of snap) tx.restore(key, ttl, dump, 'REPLACE');
  await tx.exec();
}

/** sft-shaped executor: steps 1..spec.steps, checkpoint every 2; `hooks[step]` runs after that
 * step's commit (and checkpoint) on the first attempt only. */
function hookedExecutor(hooks: Record<number, () => Promise<void>>): Executor {
  const fired = new Set<number>();
  return async (ctx): Promise<ExecutorResult> => {
    const steps = (ctx.spec as { steps: number }).steps;
    let checkpoint = ctx.resumeFrom?.path ?? null;
    for (let step = (ctx.resumeFrom?.step ?? 0) + 1; step <= steps; step++) {
      if (ctx.stopSignal.aborted)
        return { summary: {}, finalCheckpoint: checkpoint, stopped: true };
      await ctx.commitStep(step, { loss: 1 / step });
      if (step % 2 === 0) {
        checkpoint = `/ck/${step}`;
        await ctx.recordCheckpoint(step, checkpoint);
      }
      const hook = hooks[step];
      if (hook && !fired.has(step)) {
        fired.add(step);
        await hook();
      }
    }
    return { summary: { steps }, finalCheckpoint: checkpoint, stopped: false };
  };
}

const SPEC = 'kind: sft\nsteps: 8\ncheckpointInterval: 2';

async function finished(runId: string) {
  return eventually(
    async () => {
      const run = await getRun(env.store, runId);
      return run && ['succeeded', 'failed'].includes(run.state) ? run : null;
    },
    20_000,
    'run finished',
  );
}

async function stepsAndNotices(runId: string) {
  const events = await readEvents(env.store, runId, '0', 10_000);
  const committed = events
    .filter((e) => e.event.type === 'step:committed')
    .map((e) => (e.event as { step: number }).step);
  const notices = events.filter(
    (e) =>
      e.event.type === 'run:notice' && (e.event as { code: string }).code === 'redis_data_lost',
  );
  return { committed, notices, steps: (await readSteps(env.store, runId)).map((s) => s.step) };
}

describe('Redis lost acknowledged writes (a failover to a replica that was behind)', () => {
  it('mid-run: the next step finds its predecessor gone; the run resumes from the checkpoint Redis holds', async () => {
    let snap: Snapshot | undefined;
    const executor = hookedExecutor({
      // The replica is at step 4 (checkpoint 4) …
      4: async () => void (snap = await snapshot(env.redis, env.prefix)),
      // … when the primary dies after step 6: steps 5 and 6 are gone.
      6: () => failBackTo(env.redis, env.prefix, snap!),
    });
    await env.startWorker({}, { executors: { sft: executor } });
    const runId = await env.submit(SPEC);
    const run = await finished(runId);
    expect(run.state).toBe('succeeded');
    const { steps, committed, notices } = await stepsAndNotices(runId);
    expect(steps).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(committed).toEqual([1, 2, 3, 4, 5, 6, 7, 8]); // once each on the stream
    expect(notices).toHaveLength(1);
    expect((notices[0]!.event as { message: string }).message).toMatch(
      /Redis lost step 6 \(it holds steps up to 4\)/,
    );
    const transitions = await getTransitions(env.store, runId);
    expect(transitions.map((t) => t.to)).toEqual([
      'queued',
      'running',
      'retrying',
      'running',
      'succeeded',
    ]);
    expect(transitions[2]?.reason).toMatch(/Redis lost step 6.*resuming from the checkpoint/);
  });

  it('at the end: a run whose last steps are gone does not succeed until it has them again', async () => {
    let snap: Snapshot | undefined;
    const executor = hookedExecutor({
      6: async () => void (snap = await snapshot(env.redis, env.prefix)),
      // Lost after the last commit: no later write notices it; the succeed transition does.
      8: () => failBackTo(env.redis, env.prefix, snap!),
    });
    await env.startWorker({}, { executors: { sft: executor } });
    const runId = await env.submit(SPEC);
    const run = await finished(runId);
    expect(run.state).toBe('succeeded');
    const { steps, committed } = await stepsAndNotices(runId);
    expect(steps).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(committed).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    const reasons = (await getTransitions(env.store, runId)).map((t) => t.reason);
    expect(
      reasons.some((r) => /Redis lost step\(s\) 7, 8 before the run could succeed/.test(r)),
    ).toBe(true);
  });

  it('across the start: Redis has the run queued again; the worker says so and the run starts over once', async () => {
    const runId = await env.submit(SPEC);
    const snap = await snapshot(env.redis, env.prefix); // queued, job waiting: before any worker
    const executor = hookedExecutor({ 3: () => failBackTo(env.redis, env.prefix, snap) });
    await env.startWorker({}, { executors: { sft: executor } });
    const run = await finished(runId);
    expect(run.state).toBe('succeeded');
    const { steps, committed, notices } = await stepsAndNotices(runId);
    expect(steps).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(committed).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(notices).toHaveLength(1);
    expect((notices[0]!.event as { message: string }).message).toMatch(
      /Redis lost the start of attempt 1 \(run is queued, attempt 0\)/,
    );
  });
});
