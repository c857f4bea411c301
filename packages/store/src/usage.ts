// Usage metering (docs/usage.md): per run and per tenant and UTC day/month, in hashes the
// step-commit script increments atomically with the step record (usage-scripts.ts), so a
// retried or resumed step never counts twice. Slot seconds are reported per attempt as a
// high-water mark: at every step commit and when the attempt ends.
import {
  type BudgetPeriod,
  type TenantBudget,
  type Usage,
  type UsageCost,
  NO_USAGE,
  USAGE_FIELDS,
  usagePeriods,
} from '@anneal/protocol';
import { type StoreContext, keys } from './context.ts';
import { acknowledged } from './durable.ts';
import { runScript } from './scripts.ts';

/** What one write meters: a step's usage (priced) and the attempt's slot time so far. */
export interface UsageReport {
  tenant: string;
  /** A step's usage and its USD (none for a slot report alone). */
  step?: { usage: Usage; costUsd: UsageCost };
  slot?: { attempt: number; seconds: number; usdPerSecond: number };
  /** The run's `budget.maxUsd`. */
  maxUsd?: number;
  /** When it was metered: picks the tenant's day and month. */
  at: Date;
}

/** The cap a metered write reached, if any (`spentUsd` ≥ `maxUsd`). */
export type BudgetReached = { scope: 'run' | 'tenant'; spentUsd: number; maxUsd: number } | null;

/** A step's increment as METER_LUA reads it; slot time comes in the slot report only. */
function increment(usage: Usage, cost: UsageCost): Record<string, number> {
  const out: Record<string, number> = { usd: cost.total - cost.slotSeconds };
  for (const field of USAGE_FIELDS) {
    if (field === 'slotSeconds') continue;
    out[field] = usage[field];
    out[`usd:${field}`] = cost[field];
  }
  return out;
}

/** Keys and args METER_LUA reads, in its order. */
export function meterArgs(ctx: StoreContext, runId: string, report: UsageReport) {
  const k = keys(ctx.prefix);
  const periods = usagePeriods(report.at);
  const step = report.step;
  return {
    keys: [
      k.runUsage(runId),
      k.tenantUsage(report.tenant, periods.day),
      k.tenantUsage(report.tenant, periods.month),
      k.tenantLimits(report.tenant),
    ],
    args: [
      step ? JSON.stringify(increment(step.usage, step.costUsd)) : '',
      report.slot ? report.slot.attempt : '',
      report.slot ? report.slot.seconds : '',
      report.slot ? report.slot.usdPerSecond : '',
      report.maxUsd ?? '',
    ],
  };
}

/** The budget part of a metering reply: [scope, spent, cap]. */
export function budgetReached(reply: readonly (string | undefined)[]): BudgetReached {
  const [scope, spent, cap] = reply;
  if (scope !== 'run' && scope !== 'tenant') return null;
  return { scope, spentUsd: Number(spent), maxUsd: Number(cap) };
}

/** Reports an attempt's slot time on its own (when it ends); false when the run is gone. */
export async function meterSlot(
  ctx: StoreContext,
  runId: string,
  report: UsageReport & { slot: NonNullable<UsageReport['slot']> },
): Promise<{ metered: boolean; budget: BudgetReached }> {
  const { keys: meterKeys, args } = meterArgs(ctx, runId, { ...report, step: undefined });
  const reply = await acknowledged(ctx, `slot time of run ${runId}`, (redis) =>
    runScript(redis, 'annealMeterSlot', [keys(ctx.prefix).run(runId), ...meterKeys], args),
  );
  if (reply[0] !== 'metered') return { metered: false, budget: null };
  return { metered: true, budget: budgetReached(reply.slice(1)) };
}

/** Usage totals and the USD they cost, as metered (each at the prices of its time). */
export interface MeteredUsage {
  usage: Usage;
  costUsd: UsageCost;
}

function fromHash(hash: Record<string, string>): MeteredUsage {
  const usage = { ...NO_USAGE };
  const costUsd = { ...NO_USAGE, total: Number(hash.usd ?? 0) };
  for (const field of USAGE_FIELDS) {
    usage[field] = Number(hash[field] ?? 0);
    costUsd[field] = Number(hash[`usd:${field}`] ?? 0);
  }
  return { usage, costUsd };
}

export async function readRunUsage(ctx: StoreContext, runId: string): Promise<MeteredUsage> {
  return fromHash(await ctx.redis.hgetall(keys(ctx.prefix).runUsage(runId)));
}

/** A tenant's usage in one period (`YYYY-MM-DD` or `YYYY-MM`, usagePeriods). */
export async function readTenantUsage(
  ctx: StoreContext,
  tenant: string,
  period: string,
): Promise<MeteredUsage> {
  return fromHash(await ctx.redis.hgetall(keys(ctx.prefix).tenantUsage(tenant, period)));
}

/** The period of `at` a tenant's cap counts over. */
export function budgetPeriodOf(at: Date, period: BudgetPeriod): string {
  return usagePeriods(at)[period];
}

/** Writes a tenant's cap where the step-commit script reads it (null: no cap). */
export async function setTenantBudget(
  ctx: StoreContext,
  tenant: string,
  budget: TenantBudget | null,
): Promise<void> {
  const key = keys(ctx.prefix).tenantLimits(tenant);
  if (budget === null) await ctx.redis.hdel(key, 'maxUsd', 'budgetPeriod');
  else await ctx.redis.hset(key, 'maxUsd', String(budget.maxUsd), 'budgetPeriod', budget.period);
}
