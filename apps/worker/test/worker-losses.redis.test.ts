// A long run survives as many worker losses as it makes progress between (docs/reliability.md
// "Workers lost many times"). Real worker processes killed with SIGKILL; each loss is noticed by
// BullMQ 6.7's stalled-job check (moveStalledJobsToWait-9.lua: `stc` + 1 per lock found gone,
// the job failed once `stc` > maxStalledCount). A committed step or checkpoint sets `stc` back
// to 0 (store progress-script.ts), so only losses without progress in between count.
// `npm test` kills the run's worker 4 times (one more than the default cap of 3: the old code
// failed it); ANNEAL_SOAK=1 (`npm run soak`) 10 times.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JOB_CATALOGUE } from '@anneal/protocol';
import { bullPrefix, getRun, getTransitions, readSteps } from '@anneal/store';
import { type TestEnv, eventually, sftSpec, testEnv } from './helpers.ts';
import { type WorkerProcess, crashTestWorkers } from './process.ts';

const SOAK = process.env.ANNEAL_SOAK === '1';
const LOSSES = SOAK ? 10 : 4;

let env: TestEnv;
const workers = crashTestWorkers(() => env);
beforeEach(async () => {
  env = await testEnv();
});
afterEach(async () => {
  await workers.killAll();
  await env.cleanup();
});

const run = (runId: string) => getRun(env.store, runId);

/** The run job's stalled count as BullMQ keeps it (the job hash's `stc`). */
async function stalledCount(runId: string): Promise<number> {
  const key = `${bullPrefix(env.prefix)}:pool-${env.pool}:${runId}`;
  return Number((await env.redis.hget(key, 'stc')) ?? 0);
}

async function withOutput<T>(p: WorkerProcess, wait: Promise<T>): Promise<T> {
  return wait.catch((error: unknown) => {
    throw new Error(`${String(error)}\n${p.output()}`);
  });
}

/** Waits for `p` to start attempt `attempt` of the run (state running, that attempt). */
const runningIn = (p: WorkerProcess, runId: string, attempt: number) =>
  withOutput(
    p,
    eventually(
      async () => {
        const r = await run(runId);
        return r?.state === 'running' && r.attempt === attempt;
      },
      // A spawned worker compiles its sources first: minutes on a loaded 2-core machine.
      180_000,
      `attempt ${attempt} running`,
    ),
  );

describe('worker losses', () => {
  it(
    `a run whose worker is killed ${LOSSES} times, each after a committed step, succeeds with every step once`,
    async () => {
      expect(LOSSES).toBeGreaterThan(JOB_CATALOGUE.run.maxStalledCount);
      const steps = LOSSES + 3;
      const runId = await env.submit(sftSpec({ steps, interval: 1, stepMs: 1_000 }));
      let committed = 0;
      for (let loss = 1; loss <= LOSSES; loss++) {
        const p = workers.spawn(`loss-${loss}`);
        await runningIn(p, runId, loss);
        const before = committed;
        await withOutput(
          p,
          eventually(
            async () => ((await run(runId))?.lastStep ?? 0) > before,
            180_000,
            `attempt ${loss} commits a step past ${before}`,
          ),
        );
        p.child.kill('SIGKILL');
        expect(await p.exited).toBe('SIGKILL');
        committed = (await run(runId))?.lastStep ?? 0;
        expect(committed).toBeLessThan(steps); // the run is not done: the next attempt resumes it
      }
      const last = workers.spawn('finisher');
      await withOutput(
        last,
        eventually(
          async () => ['succeeded', 'failed'].includes((await run(runId))?.state ?? ''),
          120_000,
          'the run ended',
        ),
      );
      const ended = await getRun(env.store, runId, { transitions: true });
      expect(ended?.state, ended?.transitions?.at(-1)?.reason).toBe('succeeded');
      const recorded = await readSteps(env.store, runId);
      expect(recorded.map((s) => s.step)).toEqual(Array.from({ length: steps }, (_, i) => i + 1));
      const transitions = await getTransitions(env.store, runId);
      // Every loss was one: the run was taken over after each kill.
      expect(transitions.filter((t) => t.to === 'retrying')).toHaveLength(LOSSES);
      expect((await run(runId))?.attempt).toBe(LOSSES + 1);
    },
    300_000 * (LOSSES + 1),
  );

  it('a run whose worker dies before its first step each time fails after the configured count, naming it', async () => {
    const max = 1;
    const runId = await env.submit(sftSpec({ steps: 3, interval: 1, stepMs: 600_000 }));
    const extra = { ANNEAL_MAX_STALLED_COUNT: String(max) };
    for (let loss = 1; loss <= max + 1; loss++) {
      const p = workers.spawn(`doomed-${loss}`, extra);
      await runningIn(p, runId, loss);
      // A loss with no progress since the last one is counted, not reset.
      expect(await stalledCount(runId)).toBe(loss - 1);
      p.child.kill('SIGKILL');
      expect(await p.exited).toBe('SIGKILL');
    }
    const last = workers.spawn('witness', extra);
    await withOutput(
      last,
      eventually(async () => (await run(runId))?.state === 'failed', 180_000, 'failed'),
    );
    const failed = (await getTransitions(env.store, runId)).at(-1);
    expect(failed?.reason).toMatch(
      /lost 2 times in a row without a committed step or checkpoint in between \(queue\.maxStalledCount = 1, ANNEAL_MAX_STALLED_COUNT\)/,
    );
    expect(await readSteps(env.store, runId)).toEqual([]);
  }, 600_000);
});
