// Start-up: write tenant limits, budget caps and endpoints' adapter capacity to Redis (workers
// enforce them at start and at every step commit). Jobs a crash kept from
// BullMQ are re-sent by the enqueue relay's first sweep (jobs/outbox.ts).
import { type OperatorConfig, adapterCapacities } from '@anneal/protocol';
import {
  type StoreContext,
  setAdapterCapacity,
  setTenantBudget,
  setTenantLimits,
} from '@anneal/store';

export async function reconcile(store: StoreContext, operator: OperatorConfig): Promise<void> {
  for (const [tenant, settings] of Object.entries(operator.tenants)) {
    await setTenantLimits(store, tenant, { maxConcurrentRuns: settings.maxConcurrentRuns });
    await setTenantBudget(store, tenant, settings.budget ?? null);
  }
  // Every registered endpoint: a capacity no longer declared is removed (it admits every run).
  const declared = adapterCapacities(operator);
  const endpoints = [
    ...Object.keys(operator.inference).map((name) => ['inference', name] as const),
    ...Object.keys(operator.trainers).map((name) => ['trainer', name] as const),
  ];
  for (const [role, endpoint] of endpoints) {
    const capacity = declared.find((c) => c.role === role && c.endpoint === endpoint);
    await setAdapterCapacity(store, role, endpoint, capacity ?? null);
  }
}
