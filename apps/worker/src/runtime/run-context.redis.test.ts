// Fencing from the worker's side: a worker that lost its run (another worker started a newer
// attempt while it was cut off) has its step and checkpoint writes refused, and stops.
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseRunSpec } from '@anneal/protocol';
import { getCheckpoint, readSteps, startRun } from '@anneal/store';
import { createEventBus, noopLogger } from '@anneal/telemetry';
import { type TestEnv, testEnv } from '../../test/helpers.ts';
import type { RunResources } from '../executors/types.ts';
import { ActiveRun } from './active-runs.ts';
import { createExecutorContext } from './run-context.ts';

let env: TestEnv;
beforeEach(async () => {
  env = await testEnv();
});
afterEach(async () => {
  await env.cleanup();
});

async function contextFor(
  runId: string,
  workerId: string,
  attempt: number,
  artifactDir = env.artifactDir,
) {
  const active = new ActiveRun(runId, 'sft', Date.now());
  const deps = { store: env.store, workerId, telemetry: createEventBus(), logger: noopLogger };
  const spec = parseRunSpec('kind: sft\nsteps: 10');
  if (!spec.ok) throw new Error('spec');
  const ctx = createExecutorContext(
    deps,
    active,
    {
      spec: spec.value,
      resources: {} as RunResources, // not used by commitStep / recordCheckpoint
      resumeFrom: null,
      artifactDir,
    },
    attempt,
  );
  return { active, ctx };
}

describe('a worker that lost its run', () => {
  it('has its step and checkpoint writes refused and stops as lost', async () => {
    const runId = await env.submit('kind: sft\nsteps: 10', { enqueue: false });
    const first = await startRun(env.store, runId, 'w1');
    if (first.status !== 'started') throw new Error('start');
    const stale = await contextFor(runId, 'w1', first.attempt);
    await stale.ctx.commitStep(1, { loss: 1 });
    await stale.ctx.recordCheckpoint(1, '/ck/1');
    expect(stale.active.stopRequest).toBeNull();

    const second = await startRun(env.store, runId, 'w2'); // w1's job lock expired: taken over
    if (second.status !== 'started') throw new Error('takeover');
    await stale.ctx.recordCheckpoint(8, '/ck/8');
    expect(stale.active.stopRequest?.kind).toBe('lost');
    expect(stale.active.stopRequest?.reason).toMatch(/checkpoint 8 refused/);
    await stale.ctx.commitStep(8, { loss: 8 });
    expect(await getCheckpoint(env.store, runId)).toMatchObject({ step: 1, path: '/ck/1' });
    expect((await readSteps(env.store, runId)).map((s) => s.step)).toEqual([1]);

    const owner = await contextFor(runId, 'w2', second.attempt);
    await owner.ctx.commitStep(2, { loss: 2 });
    expect(owner.active.stopRequest).toBeNull();
    expect((await readSteps(env.store, runId)).map((s) => s.step)).toEqual([1, 2]);
  });
});

describe('the artifact directory', () => {
  it("is made on the executor's first read of it, not when the run starts", async () => {
    const runId = await env.submit('kind: sft\nsteps: 10', { enqueue: false });
    const dir = path.join(env.artifactDir, 'runs', runId);
    const { ctx } = await contextFor(runId, 'w1', 1, dir);
    expect(existsSync(dir)).toBe(false);
    expect(ctx.artifactDir).toBe(dir);
    expect(statSync(dir).isDirectory()).toBe(true);
    expect(ctx.artifactDir).toBe(dir);
  });
});
