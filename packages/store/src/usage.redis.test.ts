import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NO_USAGE } from '@anneal/protocol';
import { type TestStore, testSpec, testStore } from '../test/helpers.ts';
import { createRun } from './runs.ts';
import { appendStep } from './steps.ts';
import { startRun } from './transitions.ts';
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
});
