// Usage reads and the tenant cap at submission (docs/usage.md): what the store metered, the
// budgets from the spec and the operator config, and the refusal at a spent tenant cap.
import {
  type BudgetPeriod,
  type RunResource,
  type RunUsage,
  type TenantUsageList,
  usagePeriods,
} from '@anneal/protocol';
import { budgetPeriodOf, getRun, readRunUsage, readTenantUsage } from '@anneal/store';
import type { AppContext } from '../../context.ts';
import { AnnealError, runNotFound } from '../../errors.ts';

const budgetStatus = (maxUsd: number, spent: number) => ({
  maxUsd,
  remainingUsd: Math.max(0, maxUsd - spent),
  reached: spent >= maxUsd,
});

export async function runUsage(ctx: AppContext, tenant: string, runId: string): Promise<RunUsage> {
  const [run, metered] = await Promise.all([
    getRun(ctx.store, runId, { tenant }),
    readRunUsage(ctx.store, runId),
  ]);
  if (!run) throw runNotFound(runId);
  const maxUsd = run.spec.budget?.maxUsd;
  return {
    runId: run.id,
    tenant: run.tenant,
    kind: run.kind,
    state: run.state,
    ...metered,
    budget: maxUsd === undefined ? null : budgetStatus(maxUsd, metered.costUsd.total),
  };
}

/** `at` names a day (`YYYY-MM-DD`) or a month (`YYYY-MM`); absent: the current one. */
export async function tenantUsage(
  ctx: AppContext,
  query: { period: BudgetPeriod; at?: string; tenant?: string },
): Promise<TenantUsageList> {
  const at = query.at ?? usagePeriods(new Date())[query.period];
  const tenants = query.tenant === undefined ? Object.keys(ctx.operator.tenants) : [query.tenant];
  const rows = await Promise.all(
    tenants.map(async (tenant) => {
      const metered = await readTenantUsage(ctx.store, tenant, at);
      const cap = ctx.operator.tenants[tenant]?.budget;
      // The cap as it stands now, over its own current period (whatever period is viewed).
      const spent = cap ? await capSpent(ctx, tenant, cap.period) : 0;
      return {
        tenant,
        ...metered,
        budget: cap ? { ...budgetStatus(cap.maxUsd, spent), period: cap.period } : null,
      };
    }),
  );
  return { period: query.period, at, tenants: rows, prices: ctx.operator.prices };
}

/** What the tenant spent in the current `period` (its cap's). */
async function capSpent(ctx: AppContext, tenant: string, period: BudgetPeriod, now = new Date()) {
  return (await readTenantUsage(ctx.store, tenant, budgetPeriodOf(now, period))).costUsd.total;
}

/** Refuses a submission when the tenant's cap for the current period is spent. */
export async function checkTenantBudget(ctx: AppContext, tenant: string, now = new Date()) {
  const cap = ctx.operator.tenants[tenant]?.budget;
  if (!cap) return;
  const spent = await capSpent(ctx, tenant, cap.period, now);
  if (spent < cap.maxUsd) return;
  const period = budgetPeriodOf(now, cap.period);
  throw new AnnealError(
    'ANNEAL_ERR_TENANT_BUDGET_EXHAUSTED',
    `tenant '${tenant}' has spent $${spent.toFixed(2)} of its $${cap.maxUsd.toFixed(2)} ${cap.period} budget (${period}); ` +
      'new runs are refused until the period ends or the operator raises tenants.' +
      `${tenant}.budget.maxUsd`,
  );
}

/** Refuses a resume while a cap the run would spend past holds: its tenant's (the submission's
 * problem) or its own `budget.maxUsd` (docs/usage.md "Budgets"). */
export async function checkResumeBudget(ctx: AppContext, run: RunResource, now = new Date()) {
  await checkTenantBudget(ctx, run.tenant, now);
  const maxUsd = run.spec.budget?.maxUsd;
  if (maxUsd === undefined) return;
  const spent = (await readRunUsage(ctx.store, run.id)).costUsd.total;
  if (spent < maxUsd) return;
  throw new AnnealError(
    'ANNEAL_ERR_RUN_BUDGET_EXHAUSTED',
    `run ${run.id} has spent $${spent.toFixed(2)} of its $${maxUsd.toFixed(2)} budget ` +
      '(budget.maxUsd); a resume would spend past it: start a new run (model.checkpoint: ' +
      `{run: ${run.id}}) with a larger budget.maxUsd`,
  );
}
