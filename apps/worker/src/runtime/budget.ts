// What a worker does when a step's commit reaches a budget cap (docs/usage.md "Budgets"): say
// so on the run's stream, then pause the run at this step boundary.
import type { BudgetReached } from '@anneal/store';

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
