import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type TestStore, testSpec, testStore } from '../test/helpers.ts';
import { createRun } from './runs.ts';
import {
  ackTransitions,
  claimStaleTransitions,
  ensureTransitionGroup,
  readTransitions,
  runCounts,
} from './stats.ts';
import { finishRun, releaseRun, startRun, transitionRun } from './transitions.ts';

let store: TestStore;
beforeEach(async () => {
  store = await testStore();
});
afterEach(async () => {
  await store.cleanup();
});

async function newRun(yaml: string, now?: Date): Promise<string> {
  const result = await createRun(store.ctx, {
    tenant: 'acme',
    spec: testSpec(yaml),
    ...(now && { now }),
  });
  if (result.status !== 'created') throw new Error('create');
  return result.run.id;
}

const counts = async () =>
  Object.fromEntries(
    (await runCounts(store.ctx))
      .filter((c) => c.count > 0)
      .map((c) => [`${c.state}/${c.kind}`, c.count]),
  );

describe('run statistics', () => {
  it('counts runs by state and kind in step with every transition', async () => {
    const a = await newRun('kind: sft');
    const b = await newRun('kind: grpo');
    await newRun('kind: grpo');
    expect(await counts()).toEqual({ 'queued/sft': 1, 'queued/grpo': 2 });
    await startRun(store.ctx, a, 'w1');
    await startRun(store.ctx, b, 'w1');
    await releaseRun(store.ctx, b, 'drain');
    expect(await counts()).toEqual({ 'running/sft': 1, 'retrying/grpo': 1, 'queued/grpo': 1 });
    await finishRun(store.ctx, a, { state: 'succeeded', reason: 'done' });
    await transitionRun(store.ctx, b, { to: 'cancelled', reason: 'user' });
    // a refused transition changes nothing
    await transitionRun(store.ctx, a, { to: 'running', reason: 'again' });
    expect(await counts()).toEqual({ 'succeeded/sft': 1, 'cancelled/grpo': 1, 'queued/grpo': 1 });
  });

  it('logs each transition once per consumer group, with the queue wait on entering running', async () => {
    await ensureTransitionGroup(store.ctx, 'cp');
    await ensureTransitionGroup(store.ctx, 'cp'); // idempotent
    const queuedAt = new Date(Date.now() - 42_000);
    const id = await newRun('kind: sft', queuedAt);
    await startRun(store.ctx, id, 'w1');
    await finishRun(store.ctx, id, { state: 'failed', reason: 'boom' });

    const reader = store.connection();
    const first = await readTransitions(reader, store.prefix, 'cp', 'c1', 100);
    expect(first.entries.map(({ id: _id, ...rest }) => rest)).toEqual([
      { runId: id, kind: 'sft', pool: 'default', to: 'queued' },
      { runId: id, kind: 'sft', pool: 'default', to: 'running', waitedSeconds: expect.any(Number) },
      { runId: id, kind: 'sft', pool: 'default', to: 'failed' },
    ]);
    expect(first.entries[1]?.waitedSeconds).toBeGreaterThanOrEqual(42);
    expect(first.entries[1]?.waitedSeconds).toBeLessThan(60);
    // another consumer of the same group does not see them again
    expect((await readTransitions(reader, store.prefix, 'cp', 'c2', 100)).ids).toEqual([]);

    // unacknowledged entries of a dead consumer are claimed by another one
    const claimed = await claimStaleTransitions(store.ctx, 'cp', 'c2', 0);
    expect(claimed.ids).toEqual(first.ids);
    await ackTransitions(store.ctx, 'cp', claimed.ids);
    expect((await claimStaleTransitions(store.ctx, 'cp', 'c3', 0)).ids).toEqual([]);
  });
});
