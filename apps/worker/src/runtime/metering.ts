// How one attempt's usage is metered (docs/usage.md): the reports its step commits and its end
// send to the store (usage.ts there: the step's usage, priced, and the attempt's slot time so
// far), and what each report added once the store took it, for the anneal_tenant_* counters.
import {
  NO_USAGE,
  priceUsage,
  stepUsage,
  type Usage,
  type UsageCost,
  type UsagePrices,
} from '@anneal/protocol';
import type { BudgetReached, UsageReport } from '@anneal/store';

export type SlotReport = UsageReport & { slot: NonNullable<UsageReport['slot']> };

export interface MeteringOptions {
  tenant: string;
  prices: UsagePrices;
  attempt: number;
  /** When the attempt took its slot: slot seconds count from then. */
  slotSinceMs: number;
  /** Told once per attempt when a step's commit reaches the run's or the tenant's cap; says
   * so on the run's stream and returns the sentence the run is paused with. */
  onBudget(reached: NonNullable<BudgetReached>, step: number): Promise<string>;
}

export class AttemptMeter {
  /** Slot seconds the store holds for this attempt (its high-water mark, as this process sent it). */
  private slotMetered = 0;

  constructor(readonly options: MeteringOptions) {}

  /** The report of a step commit (its record's metrics) or of the attempt's end (null). */
  report(
    metrics: Readonly<Record<string, number | null>> | null,
    maxUsd: number | undefined,
    nowMs: number = Date.now(),
  ): SlotReport {
    const { tenant, prices, attempt, slotSinceMs } = this.options;
    const usage = metrics && stepUsage(metrics);
    return {
      tenant,
      ...(usage && { step: { usage, costUsd: priceUsage(usage, prices) } }),
      slot: {
        attempt,
        seconds: Math.max(0, (nowMs - slotSinceMs) / 1000),
        usdPerSecond: prices.perSlotHour / 3600,
      },
      ...(maxUsd !== undefined && { maxUsd }),
      at: new Date(nowMs),
    };
  }

  /** What a report the store metered added (call only then: a duplicate commit adds nothing). */
  added(report: SlotReport): { tenant: string; usage: Usage; costUsd: UsageCost } {
    const slotSeconds = Math.max(0, report.slot.seconds - this.slotMetered);
    this.slotMetered = Math.max(this.slotMetered, report.slot.seconds);
    const usage = { ...(report.step?.usage ?? NO_USAGE), slotSeconds };
    const slot = priceUsage({ ...NO_USAGE, slotSeconds }, this.options.prices).slotSeconds;
    const step = report.step?.costUsd ?? { ...NO_USAGE, total: 0 };
    return {
      tenant: report.tenant,
      usage,
      costUsd: { ...step, slotSeconds: slot, total: step.total - step.slotSeconds + slot },
    };
  }
}
