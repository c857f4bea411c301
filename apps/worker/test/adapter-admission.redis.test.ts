// Adapter slots with a real worker (docs/operations.md "Adapter capacity"): a worker with two
// run slots holds two jobs, but the endpoint has room for one run's adapters, so the second run
// waits queued (its job delayed and offered again, as at a tenant cap), saying why, and starts
// once the first gives its slots back; the two never hold slots at once.
import { createRun, enqueueRun, getRun, readAdapterSlots, setAdapterCapacity } from '@anneal/store';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type TestEnv, eventually, resolveSpec, testEnv } from './helpers.ts';

let env: TestEnv;
beforeEach(async () => {
  env = await testEnv();
});
afterEach(async () => {
  await env.cleanup();
});

async function submitWithDemand(slots: number): Promise<string> {
  const spec = resolveSpec('kind: sft\nsteps: 6\nlabels: {step-ms: "40"}', env.operatorConfig);
  const created = await createRun(env.store, {
    tenant: 'default',
    spec,
    adapterDemand: [{ role: 'inference', endpoint: 'gen', slots, detail: `test ${slots}` }],
  });
  if (created.status !== 'created') throw new Error(created.status);
  await enqueueRun(env.queues.get(spec.pool), { id: created.run.id, priority: spec.priority });
  return created.run.id;
}

describe('adapter slots with a real worker', () => {
  it('a run that does not fit waits queued with its reason and starts when slots free', async () => {
    await setAdapterCapacity(env.store, 'inference', 'gen', { slots: 4, oversubscribe: false });
    await env.startWorker({ slots: 2 });
    const first = await submitWithDemand(3);
    await eventually(async () => (await getRun(env.store, first))?.state === 'running');
    const second = await submitWithDemand(3);
    await eventually(
      async () => (await getRun(env.store, second))?.waitingReason !== undefined,
      30_000,
      'second run blocked',
    );
    expect((await getRun(env.store, second))?.waitingReason).toBe(
      `waiting for 3 adapter slots on inference endpoint 'gen': 3 of 4 held by runs ${first} (3)`,
    );
    for (const id of [first, second]) {
      await eventually(
        async () => (await getRun(env.store, id))?.state === 'succeeded',
        60_000,
        `${id} succeeded`,
      );
    }
    const [a, b] = await Promise.all([getRun(env.store, first), getRun(env.store, second)]);
    expect(Date.parse(b?.startedAt ?? '')).toBeGreaterThanOrEqual(Date.parse(a?.endedAt ?? ''));
    expect(b?.waitingReason).toBeUndefined();
    expect(await readAdapterSlots(env.store, 'inference', 'gen')).toMatchObject({
      held: [],
      waiting: [],
    });
  }, 90_000);
});
