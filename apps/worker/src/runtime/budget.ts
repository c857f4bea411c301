// What a worker does when a step's commit reaches a budget cap (docs/usage.md "Budgets"): say
// so on the run's stream, then pause the run at this step boundary.
import type { BudgetAtStart, BudgetReached } from '@anneal/store';

export const BUDGET_NOTICE = 'budget_exhausted';

const dollars = (usd: number) => `$${usd.toFixed(usd < 1 ? 4 : 2)}`;

/** The sentence the run's event and pause reason carry. */
export function budgetMessage(
  reached: NonNullable<BudgetReached>,
  step: number,
  tenant: string,
): string {
  const spent = `${dollars(reached.spentUsd)} of ${dollars(reached.maxUsd)}`;
  return reached.scope === 'run'
    ? `run budget reached at step ${step}: spent ${spent} (budget.maxUsd); the run pauses`
    : `tenant '${tenant}' reached its budget at step ${step}: spent ${spent} this period; its runs pause`;
}

/** The sentence of a run not started because a cap is spent (it waits `paused` by `budget`). */
export function budgetAtStartMessage(budget: BudgetAtStart, tenant: string): string {
  const spent = `${dollars(budget.spentUsd)} of ${dollars(budget.maxUsd)}`;
  return budget.scope === 'run'
    ? `run budget spent before the run could start: ${spent} (budget.maxUsd); the run waits paused`
    : `tenant '${tenant}' is at its budget: spent ${spent} in ${budget.period}; the run waits ` +
        `paused, not started, until resumed once the period ends or tenants.${tenant}.budget.maxUsd is raised`;
}
