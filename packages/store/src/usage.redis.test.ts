import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NO_USAGE } from '@anneal/protocol';
import { type TestStore, testSpec, testStore } from '../test/helpers.ts';
import { createRun } from './runs.ts';
import { appendStep } from './steps.ts';
import { getRun } from './runs.ts';
import { releaseRun, startRun } from './transitions.ts';
import { keys } from './context.ts';
import { meterSlot, readRunUsage, readTenantUsage, setTenantBudget } from './usage.ts';

let store: TestStore;
let runId: string;
const at = new Date('2026-12-02T10:00:00Z');
const stepUsage = (completionTokens: number, usd: number) => ({
  usage: { ...NO_USAGE, promptTokens: 10, completionTokens, toolCalls: 2 },
  // All of it on the completion tokens: the breakdown must add up to the total.
  costUsd: { ...NO_USAGE, completionTokens: usd, total: usd },
});

beforeEach(async () => {
  store = await testStore();
  const result = await createRun(store.ctx, { tenant: 't', spec: testSpec('kind: grpo') });
  if (result.status !== 'created') throw new Error('create');
  runId = result.run.id;
  await startRun(store.ctx, runId, 'w1');
});
afterEach(async () => {
  await store.cleanup();
});

describe('usage metering', () => {
  it('counts a step once however often it is committed, in the run and its tenant periods', async () => {
    const commit = (step: number, tokens: number) =>
      appendStep(
        store.ctx,
        runId,
        step,
        { loss: 1 },
        {
          usage: { tenant: 't', step: stepUsage(tokens, tokens / 100), at },
        },
      );
    await commit(1, 100);
    // The same step again (a resumed attempt re-running it), with other numbers: ignored.
    const racing = await Promise.all(Array.from({ length: 4 }, () => commit(1, 900)));
    expect(racing.every((r) => r.status === 'duplicate')).toBe(true);
    await commit(2, 50);
    const run = await readRunUsage(store.ctx, runId);
    expect(run.usage).toEqual({
      ...NO_USAGE,
      promptTokens: 20,
      completionTokens: 150,
      toolCalls: 4,
    });
    expect(run.costUsd.total).toBeCloseTo(1.5, 12);
    expect(run.costUsd.completionTokens).toBeCloseTo(1.5, 12);
    expect(await readTenantUsage(store.ctx, 't', '2026-12-02')).toEqual(run);
    expect(await readTenantUsage(store.ctx, 't', '2026-12')).toEqual(run);
    expect((await readTenantUsage(store.ctx, 't', '2026-12-03')).costUsd.total).toBe(0);
  });

  it('keeps slot seconds per attempt as a high-water mark', async () => {
    const slot = (attempt: number, seconds: number) =>
      meterSlot(store.ctx, runId, {
        tenant: 't',
        slot: { attempt, seconds, usdPerSecond: 0.01 },
        at,
      });
    await slot(1, 30);
    await slot(1, 30); // re-sent
    await slot(1, 20); // an older report arriving late
    await slot(1, 45);
    await slot(2, 10);
    const usage = await readRunUsage(store.ctx, runId);
    expect(usage.usage.slotSeconds).toBe(55);
    expect(usage.costUsd.total).toBeCloseTo(0.55, 12);
    expect(usage.costUsd.slotSeconds).toBeCloseTo(0.55, 12);
    expect(
      await meterSlot(store.ctx, 'run_missing', {
        tenant: 't',
        slot: { attempt: 1, seconds: 5, usdPerSecond: 1 },
        at,
      }),
    ).toEqual({ metered: false, budget: null });
  });

  it('says when the run cap or the tenant cap is reached', async () => {
    const commit = (step: number, usd: number, maxUsd?: number) =>
      appendStep(
        store.ctx,
        runId,
        step,
        { loss: 1 },
        {
          usage: {
            tenant: 't',
            step: stepUsage(1, usd),
            at,
            ...(maxUsd !== undefined && { maxUsd }),
          },
        },
      );
    const first = await commit(1, 0.4, 1);
    expect(first.status === 'committed' && first.budget).toBeNull();
    const second = await commit(2, 0.6, 1);
    expect(second.status === 'committed' && second.budget).toEqual({
      scope: 'run',
      spentUsd: 1,
      maxUsd: 1,
    });
    await setTenantBudget(store.ctx, 't', { maxUsd: 1.2, period: 'day' });
    const third = await commit(3, 0.3);
    expect(third.status === 'committed' && third.budget).toEqual({
      scope: 'tenant',
      spentUsd: 1.3,
      maxUsd: 1.2,
    });
    await setTenantBudget(store.ctx, 't', null);
    const fourth = await commit(4, 0.1);
    expect(fourth.status === 'committed' && fourth.budget).toBeNull();
  });

  it('starts no run once its tenant cap or its own budget is spent (the start script decides)', async () => {
    await setTenantBudget(store.ctx, 'u', { maxUsd: 1, period: 'day' });
    const create = async (tenant: string, yaml = 'kind: grpo') => {
      const result = await createRun(store.ctx, { tenant, spec: testSpec(yaml) });
      if (result.status !== 'created') throw new Error('create');
      return result.run.id;
    };
    const spender = await create('u');
    expect((await startRun(store.ctx, spender, 'w1', at)).status).toBe('started');
    const queued = await Promise.all(Array.from({ length: 8 }, () => create('u')));
    const spend = (id: string, step: number, usd: number, tenant: string, maxUsd?: number) =>
      appendStep(
        store.ctx,
        id,
        step,
        { loss: 1 },
        { usage: { tenant, step: stepUsage(1, usd), at, ...(maxUsd !== undefined && { maxUsd }) } },
      );
    // Short of the cap: a run still starts.
    await spend(spender, 1, 0.75, 'u');
    expect((await startRun(store.ctx, queued[0]!, 'w2', at)).status).toBe('started');
    await spend(spender, 2, 0.25, 'u');
    // At the cap: eight racing starts, none starts; nothing changed on their records.
    const starts = await Promise.all(
      queued.slice(1).map((id) => startRun(store.ctx, id, 'w3', at)),
    );
    for (const start of starts) {
      expect(start).toEqual({
        status: 'over-budget',
        budget: { scope: 'tenant', spentUsd: 1, maxUsd: 1, period: '2026-12-02' },
      });
    }
    for (const id of queued.slice(1)) expect((await getRun(store.ctx, id))?.state).toBe('queued');
    expect(await store.ctx.redis.scard(keys(store.ctx.prefix).tenantRunning('u'))).toBe(2);
    // Another day: the day cap has room again.
    const nextDay = new Date('2026-12-03T00:00:01Z');
    expect((await startRun(store.ctx, queued[1]!, 'w3', nextDay)).status).toBe('started');

    // The run's own budget: spent, the run is handed back, and does not start again.
    const own = await create('t', 'kind: grpo\nbudget:\n  maxUsd: 0.5');
    await startRun(store.ctx, own, 'w1', at);
    await spend(own, 1, 0.6, 't', 0.5);
    await releaseRun(store.ctx, own, 'worker lost');
    expect(await startRun(store.ctx, own, 'w2', at)).toEqual({
      status: 'over-budget',
      budget: { scope: 'run', spentUsd: 0.6, maxUsd: 0.5, period: '' },
    });
    expect((await getRun(store.ctx, own))?.state).toBe('retrying');
  });
});
