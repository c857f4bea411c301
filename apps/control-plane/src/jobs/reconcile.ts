// Start-up: write tenant limits and budget caps to Redis (workers enforce them at start and at
// every step commit). Jobs a crash kept from
// BullMQ are re-sent by the enqueue relay's first sweep (jobs/outbox.ts).
import type { OperatorConfig } from '@anneal/protocol';
import { type StoreContext, setTenantBudget, setTenantLimits } from '@anneal/store';

export async function reconcile(store: StoreContext, operator: OperatorConfig): Promise<void> {
  for (const [tenant, settings] of Object.entries(operator.tenants)) {
    await setTenantLimits(store, tenant, { maxConcurrentRuns: settings.maxConcurrentRuns });
    await setTenantBudget(store, tenant, settings.budget ?? null);
  }
}
