// Crash safety with the real worker process: kill -9 mid-run, BullMQ notices the stalled job
// (short lock/stalled intervals via env), a second worker resumes from the last checkpoint, and
// the committed step records hold every step exactly once.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { getRun, getTransitions, getWorker, readSteps } from '@anneal/store';
import { readRunOutcome } from '../src/resources/run-outcome.ts';
import { type TestEnv, eventually, sftSpec, testEnv } from './helpers.ts';
import { crashTestWorkers } from './process.ts';

let env: TestEnv;
const workers = crashTestWorkers(() => env);
const worker = workers.spawn;
beforeEach(async () => {
  env = await testEnv();
});
afterEach(async () => {
  await workers.killAll();
  await env.cleanup();
});

const run = (runId: string) => getRun(env.store, runId);

describe('worker process', () => {
  it('kill -9 mid-run: another worker resumes from the last checkpoint; every step once', async () => {
    const a = worker('crash-a');
    const runId = await env.submit(sftSpec({ steps: 40, interval: 5, stepMs: 100 }));
    await eventually(
      async () => ((await run(runId))?.lastStep ?? 0) >= 12,
      60_000,
      'a ran 12 steps',
    ).catch((error: unknown) => {
      throw new Error(`${String(error)}\n${a.output()}`);
    });
    a.child.kill('SIGKILL');
    expect(await a.exited).toBe('SIGKILL');
    const atCrash = await run(runId);
    expect(atCrash?.state).toBe('running'); // nobody told the store: the worker just vanished
    const checkpointStep = atCrash?.checkpoint?.step ?? -1;
    expect(checkpointStep).toBeGreaterThanOrEqual(10);
    expect(checkpointStep % 5).toBe(0);

    const b = worker('crash-b');
    await eventually(
      async () => (await run(runId))?.state === 'succeeded',
      60_000,
      'b finished',
    ).catch((error: unknown) => {
      throw new Error(`${String(error)}\n${b.output()}`);
    });
    const transitions = await getTransitions(env.store, runId);
    expect(transitions.map((t) => t.to)).toEqual([
      'queued',
      'running',
      'retrying',
      'running',
      'succeeded',
    ]);
    expect(transitions[2]?.reason).toMatch(/worker crash-a lost/);
    expect(transitions[3]?.workerId).toBe('crash-b');
    // Resumed from the checkpoint, not from scratch; the steps after it were run again...
    expect((await readRunOutcome(env.store, runId)).summary?.resumedFrom).toBe(checkpointStep);
    // ...and committed once: step records are idempotent by step number.
    const steps = await readSteps(env.store, runId);
    expect(steps.map((s) => s.step)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
  }, 150_000);

  it('SIGTERM: hands the run back at a step boundary and exits 0 within the grace period', async () => {
    const a = worker('term-a', { ANNEAL_SHUTDOWN_GRACE_SECONDS: '10' });
    const runId = await env.submit(sftSpec({ steps: 400, interval: 50, stepMs: 50 }));
    await eventually(async () => ((await run(runId))?.lastStep ?? 0) >= 3, 60_000, 'started');
    const signalled = Date.now();
    a.child.kill('SIGTERM');
    expect(await a.exited).toBe(0);
    expect(Date.now() - signalled).toBeLessThan(10_000);
    const after = await getRun(env.store, runId, { transitions: true });
    expect(after?.state).toBe('retrying');
    expect(after?.transitions?.at(-1)?.reason).toBe('worker term-a shutting down');
    expect(after?.checkpoint?.step).toBe(after?.lastStep);
    expect(await getWorker(env.store, 'term-a')).toBeNull();
  }, 90_000);

  it('exits 2 with the variable named when the environment is invalid', async () => {
    const p = worker('bad-env', { ANNEAL_SLOTS: 'zero' }, 'production');
    expect(await p.exited).toBe(2);
    expect(p.output()).toMatch(/ANNEAL_SLOTS/);
  }, 60_000);

  it('the production entry takes no executors from the environment', async () => {
    // The old ANNEAL_TEST_EXECUTORS seam imported the module an env var named; now such a
    // variable is ignored and the module is never loaded (it would exit 3 if it were).
    const probe = path.join(env.artifactDir, 'probe.mjs');
    await writeFile(probe, 'process.exit(3);\n');
    const p = worker('no-seam', { ANNEAL_TEST_EXECUTORS: probe }, 'production');
    await eventually(async () => (await getWorker(env.store, 'no-seam')) !== null, 60_000, 'up');
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  }, 90_000);
});
