// The GRPO run's rollout ledger (docs/architecture.md "The rollout ledger", docs/reliability.md
// "The rollout ledger"): each step's records are built and written as this attempt's copy while
// the step goes on (weight sync), the training loop awaits that write before it commits the step
// (a committed step always has its copy on disk), and renames the copy to the step's once Redis
// says this attempt committed it. Exactly once across attempts: a starting attempt reconciles
// the directory with the steps Redis holds (@anneal/store reconcileLedger). Bounded: a step that
// leaves the keep-all window keeps only its seeded sample of groups.
import type { Rollout } from '@anneal/envs';
import type { LedgerConfig } from '@anneal/protocol';
import { createRng, deriveSeed } from '@anneal/rl';
import {
  commitLedgerStep,
  discardLedgerStep,
  pruneLedger,
  pruneLedgerStep,
  reconcileLedger,
  writeLedgerStep,
  type CommittedStep,
} from '@anneal/store/files';
import type { CommitOutcome, ExecutorContext } from '../types.ts';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { groupRecords, type LedgerRecordInputs, type SharedParts } from './ledger-records.ts';

/** The groups of `step` kept once it leaves the keep-all window: `count` of `groups`, drawn by
 * the run seed and the step (the same on every attempt). */
export function sampleGroups(seed: number, step: number, groups: number, count: number): number[] {
  const rng = createRng(deriveSeed(seed, `ledger-sample:${step}`));
  const order = Array.from({ length: groups }, (_, g) => g);
  const kept = Math.min(count, groups);
  for (let i = 0; i < kept; i++) {
    const j = rng.int(i, groups - 1);
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order.slice(0, kept).sort((a, b) => a - b);
}

export type LedgerStepData = Omit<LedgerRecordInputs, 'resultChars' | 'hasTokens' | 'cache'> & {
  /** Rollbacks the run had taken when the step ran (guardrails epoch). */
  rollbacks: number;
};

interface PendingWrite {
  rollbacks: number;
  written: Promise<void>;
}

export class RolloutLedger {
  /** Decoded turns of rollouts seen before (cached reference groups recur across steps). */
  private readonly cache = new WeakMap<Rollout, SharedParts>();
  private readonly pending = new Map<number, PendingWrite>();

  private constructor(
    private readonly ctx: ExecutorContext<'grpo'>,
    private readonly caps: LedgerConfig,
  ) {}

  /** The run's ledger, reconciled with the steps Redis holds; null when the runtime gives no
   * ledger caps (contexts without an artifact directory) or the operator turned it off. */
  static async open(ctx: ExecutorContext<'grpo'>): Promise<RolloutLedger | null> {
    const caps = ctx.resources.ledger;
    if (caps === undefined || !caps.enabled) return null;
    const committed = new Map<number, CommittedStep>(
      (await ctx.committedSteps()).map((r) => [
        r.step,
        { attempt: r.attempt, rollbacks: r.rollbacks ?? 0 },
      ]),
    );
    const runDir = ctx.artifactDir;
    await reconcileLedger(runDir, { attempt: ctx.attempt, committed });
    const last = Math.max(0, ...committed.keys());
    await pruneLedger(runDir, last - caps.keepAllSteps);
    return new RolloutLedger(ctx, caps);
  }

  /** Starts writing the step's copy in later event-loop turns, one group per turn, so the
   * step's own work (the weight sync) goes on meanwhile; `beforeCommit(step)` awaits it. */
  write(data: LedgerStepData): void {
    const { spec } = this.ctx;
    const inputs: LedgerRecordInputs = {
      ...data,
      hasTokens: spec.ledger.tokens,
      resultChars: this.caps.resultChars,
      cache: this.cache,
    };
    const write = (async () => {
      const groups = [];
      for (let g = 0; g < data.batch.groups.length; g++) {
        await nextTurn();
        groups.push(groupRecords(inputs, g));
      }
      await writeLedgerStep(this.ctx.artifactDir, {
        step: data.step,
        attempt: this.ctx.attempt,
        rollbacks: data.rollbacks,
        policyVersion: data.batch.version,
        groupSize: spec.rollout.groupSize,
        hasTokens: spec.ledger.tokens,
        sample: sampleGroups(spec.seed, data.step, groups.length, this.caps.sampleGroups),
        groups,
        compression: this.caps.compression,
      });
    })();
    write.catch(() => undefined); // reported by beforeCommit, which awaits it
    const earlier = this.pending.get(data.step);
    // A step a guardrail rolled back before its commit, run again: its first copy goes.
    if (earlier) void this.discard(data.step, earlier);
    this.pending.set(data.step, { rollbacks: data.rollbacks, written: write });
  }

  private async discard(step: number, write: PendingWrite): Promise<void> {
    await write.written.catch(() => undefined);
    const owner = { attempt: this.ctx.attempt, rollbacks: write.rollbacks };
    await discardLedgerStep(this.ctx.artifactDir, step, owner);
  }

  /** Resolves once the step's copy is on disk (throws what writing it threw). */
  async beforeCommit(step: number): Promise<void> {
    const write = this.pending.get(step);
    this.pending.delete(step);
    await write?.written;
  }

  /** The step's commit outcome decides its copy: the step's, or removed. */
  async afterCommit(step: number, outcome: CommitOutcome, rollbacks: number): Promise<void> {
    const owner = { attempt: this.ctx.attempt, rollbacks };
    const runDir = this.ctx.artifactDir;
    if (outcome !== 'committed') {
      await discardLedgerStep(runDir, step, owner);
      return;
    }
    await commitLedgerStep(runDir, step, owner);
    const leaving = step - this.caps.keepAllSteps;
    if (leaving >= 1) await pruneLedgerStep(runDir, leaving);
  }

  /** Removes the copies of steps this attempt wrote and will not commit (the loop stopped or
   * failed between a step's write and its commit). */
  async close(): Promise<void> {
    const pending = [...this.pending];
    this.pending.clear();
    await Promise.all(pending.map(([step, write]) => this.discard(step, write)));
  }
}
