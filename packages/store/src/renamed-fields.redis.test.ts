// Step records, rolled-back steps and guardrail firings an older worker stored in Redis, before
// the rollback count was named `rollbacks` (docs/recipe.md "Renamed fields"): `generation`,
// `rolledBack.rollback`, a firing's `rollback`. The JSON below is what that worker's store wrote;
// every reader returns it under the new name (the old one stays until DEPRECATED_NAMES_UNTIL).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type TestStore, testSpec, testStore } from '../test/helpers.ts';
import { keys } from './context.ts';
import { readRolledBackSteps } from './guardrails.ts';
import { createRun, getRun } from './runs.ts';
import { appendStep, readSteps, readStepsJson } from './steps.ts';
import { startRun } from './transitions.ts';

let store: TestStore;
let runId: string;
let attempt: number;
beforeEach(async () => {
  store = await testStore();
  const result = await createRun(store.ctx, { tenant: 't', spec: testSpec('kind: grpo') });
  if (result.status !== 'created') throw new Error('create');
  runId = result.run.id;
  const started = await startRun(store.ctx, runId, 'w1');
  if (started.status !== 'started') throw new Error('start');
  attempt = started.attempt;
});
afterEach(async () => {
  await store.cleanup();
});

const at = '2026-11-02T10:00:00.000Z';

/** What an older worker's store left: step 1 before any rollback, step 2 re-run after the first,
 * step 2's first run kept as rolled back, and the firing on the run record. */
async function writeOldRecords(): Promise<void> {
  const k = keys(store.ctx.prefix);
  const old = {
    1: { step: 1, attempt, metrics: { generation: 5, loss: 1 }, at },
    2: { step: 2, generation: 1, attempt, metrics: { loss: 0.5 }, at },
  };
  await store.ctx.redis.hset(
    k.steps(runId),
    '1',
    JSON.stringify(old[1]),
    '2',
    JSON.stringify(old[2]),
  );
  await store.ctx.redis.zadd(k.stepIndex(runId), 1, '1', 2, '2');
  const rolledBack = {
    step: 2,
    metrics: { loss: 9 },
    at,
    rolledBack: { rollback: 1, at, fired: true },
  };
  await store.ctx.redis.hset(k.rolledBackSteps(runId), '2:1:fired', JSON.stringify(rolledBack));
  const firing = {
    step: 2,
    rule: {
      name: 'loss',
      metric: 'loss',
      when: 'above',
      value: 1,
      forSteps: 1,
      action: 'rollback',
      origin: 'spec',
    },
    values: [{ step: 2, value: 9 }],
    action: 'rollback',
    restored: { step: 1, path: null },
    rolledBackSteps: [],
    rollback: 1,
    learningRateScale: 0.5,
    reason: 'loss above 1',
    at,
  };
  await store.ctx.redis.hset(
    k.run(runId),
    'rollbacks',
    '1',
    'guardrailFirings',
    JSON.stringify([firing]),
  );
}

describe('records an older worker stored with the old rollback names', () => {
  it('read back with `rollbacks`: step records (parsed and as JSON), rolled-back steps, firings', async () => {
    await writeOldRecords();
    const steps = await readSteps(store.ctx, runId);
    expect(steps.map((s) => [s.step, s.rollbacks])).toEqual([
      [1, undefined],
      [2, 1],
    ]);
    // a metric that happens to be called `generation` is a metric, not the rollback count
    expect(steps[0]!.metrics).toEqual({ generation: 5, loss: 1 });
    const json = (await readStepsJson(store.ctx, runId)).map((s) => JSON.parse(s) as object);
    expect(json[0]).not.toHaveProperty('rollbacks');
    expect(json[1]).toMatchObject({ step: 2, rollbacks: 1, generation: 1 });

    const [back] = await readRolledBackSteps(store.ctx, runId);
    expect(back!.rolledBack).toMatchObject({ rollbacks: 1, fired: true });

    const run = await getRun(store.ctx, runId);
    expect(run?.guardrails?.firings[0]).toMatchObject({ rollbacks: 1, learningRateScale: 0.5 });
  });

  it('a step committed now carries `rollbacks` and, until the deprecation date, `generation`', async () => {
    await appendStep(store.ctx, runId, 1, { loss: 1 }, { attempt, rollbacks: 2 });
    const [stored] = await readStepsJson(store.ctx, runId);
    expect(JSON.parse(stored!)).toMatchObject({ step: 1, rollbacks: 2, generation: 2 });
  });
});
