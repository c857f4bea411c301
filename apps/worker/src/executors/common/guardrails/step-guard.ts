// The guardrails of one run's training loop (docs/guardrails.md): every step's metrics go
// through the monitor before the step is committed. notify and pause firings are recorded with
// the committed step; rollback and stop act before any commit, so the step that fired is never
// in the run's history: a rollback keeps it (and the steps it takes back) as rolled back, a stop
// fails the run naming the rule and the values.
import { type GuardrailFiring, type StepRecord, rollbacksFields } from '@anneal/protocol';
import { GuardrailStopError } from '../../../errors.ts';
import type { ExecutorContext, GuardrailHooks, RestorePoint } from '../../types.ts';
import { type Epoch, epochOf } from './epoch.ts';
import { GuardrailMonitor, type RuleFiring, type StepVerdict } from './monitor.ts';

type Metrics = Readonly<Record<string, number | null | undefined>>;

/** How a firing's reason ends for the actions recorded with the step. */
const ACTION_TEXT: Record<GuardrailFiring['action'], string> = {
  notify: 'notified',
  pause: 'pausing the run at this step',
  rollback: 'rolling back',
  stop: 'stopping the run',
};

function condition(rule: RuleFiring['rule']): string {
  const over = rule.forSteps > 1 ? ` for ${rule.forSteps} steps` : '';
  switch (rule.when) {
    case 'above':
      return `> ${rule.value}${over}`;
    case 'below':
      return `< ${rule.value}${over}`;
    case 'nonFinite':
      return `not finite${over}`;
    case 'spike':
      return `> ${rule.factor} × its running median${over}`;
  }
}

/** `guardrail 'kl' (train_inference_kl > 0.5 for 2 steps) fired at step 8: 2.1 at 7, 2.3 at 8`. */
export function firingText(step: number, f: RuleFiring): string {
  const values = f.values.map((v) => `${v.value} at ${v.step}`).join(', ');
  const median = f.median === undefined ? '' : ` (median ${f.median})`;
  return `guardrail '${f.rule.name}' (${f.rule.metric} ${condition(f.rule)}) fired at step ${step}: ${values}${median}`;
}

/** JSON-safe metrics of the step that fired (never committed): non-finite values as null. */
function recordOf(step: number, rollbacks: number, metrics: Metrics): StepRecord {
  const clean: Record<string, number | null> = {};
  for (const [k, v] of Object.entries(metrics)) {
    if (v !== undefined) clean[k] = v !== null && Number.isFinite(v) ? v : null;
  }
  return { step, ...rollbacksFields(rollbacks), metrics: clean, at: new Date().toISOString() };
}

export class StepGuard {
  private readonly monitor: GuardrailMonitor;
  private current: Epoch;
  private safe: RestorePoint;

  private constructor(
    private readonly hooks: GuardrailHooks,
    private readonly seed: number,
  ) {
    this.monitor = new GuardrailMonitor(hooks.policy.rules);
    this.current = epochOf(seed, hooks.rollbacks, hooks.learningRateScale);
    this.safe = hooks.safeCheckpoint ?? { step: 0, path: null };
  }

  /** The run's guard, its rules' state rebuilt from the records of steps 1..doneSteps (the
   * steps after the resume point run again and are observed then). A run with no rule still
   * gets one: an earlier rollback's count and learning rate stay in force. */
  static async open(ctx: ExecutorContext, doneSteps: number): Promise<StepGuard | null> {
    const hooks = ctx.guardrails;
    if (!hooks) return null;
    const guard = new StepGuard(hooks, ctx.spec.seed);
    if (doneSteps > 0 && hooks.policy.rules.length > 0) {
      for (const record of await ctx.committedSteps()) {
        if (record.step <= doneSteps) guard.monitor.observe(record.step, record.metrics);
      }
    }
    return guard;
  }

  get epoch(): Epoch {
    return this.current;
  }

  observe(step: number, metrics: Metrics): StepVerdict {
    return this.monitor.observe(step, metrics);
  }

  private key(step: number): string {
    return `${this.current.rollbacks}:${step}`;
  }

  private firing(step: number, f: RuleFiring, action: GuardrailFiring['action'], reason: string) {
    const { rule, values, median } = f;
    return {
      step,
      rule,
      values,
      ...(median !== undefined && { median }),
      action,
      reason,
      at: new Date().toISOString(),
    };
  }

  /** After the step is committed (and checkpointed at `checkpoint`): its notify and pause
   * firings recorded; a checkpoint at which no rule held becomes the rollback target. */
  async afterCommit(step: number, verdict: StepVerdict, checkpoint: string | null | undefined) {
    if (verdict.firings.length > 0) {
      const firings = verdict.firings.map((f) =>
        this.firing(
          step,
          f,
          f.rule.action,
          `${firingText(step, f)}; ${ACTION_TEXT[f.rule.action]}`,
        ),
      );
      await this.hooks.record(this.key(step), firings);
      // The loop checkpoints the committed steps when it stops at the next boundary.
      const pause = firings.find((f) => f.action === 'pause');
      if (pause) await this.hooks.pause(pause.reason);
    }
    if (checkpoint !== undefined && verdict.quiet) {
      this.safe = { step, path: checkpoint };
      await this.hooks.markSafe(this.safe);
    }
  }

  /**
   * A rollback or stop fired at `step` (not committed). Rollback: the run is taken back to the
   * last clean checkpoint and the loop goes on from there after one more rollback (returns the
   * point restored, null when the run is no longer this attempt's). Stop, a rollback past
   * `maxRollbacks`, or one the executor cannot take (`canRestore` false): GuardrailStopError.
   */
  async intervene(
    step: number,
    verdict: StepVerdict,
    metrics: Metrics,
    canRestore: boolean,
  ): Promise<RestorePoint | null> {
    const decisive = verdict.firings.filter((f) => f.rule.action === verdict.action);
    const first = decisive[0]!;
    const text = decisive.map((f) => firingText(step, f)).join('; ');
    const { maxRollbacks } = this.hooks.policy;
    const { rollbacks } = this.current;
    let refusal: string | null = null;
    if (verdict.action === 'rollback' && rollbacks >= maxRollbacks) {
      refusal = `the run has taken its ${maxRollbacks} rollback(s) (maxRollbacks)`;
    } else if (verdict.action === 'rollback' && !canRestore) {
      refusal = 'this run kind cannot roll back';
    }
    const reasonOf = (f: RuleFiring) => `${firingText(step, f)}; ${ACTION_TEXT[f.rule.action]}`;
    if (verdict.action === 'stop' || refusal !== null) {
      const why = refusal === null ? 'stopping the run' : `stopping the run: ${refusal}`;
      const message = `${text}; ${why}`;
      const firings = verdict.firings.map((f) =>
        decisive.includes(f)
          ? this.firing(step, f, 'stop', `${firingText(step, f)}; ${why}`)
          : this.firing(step, f, f.rule.action, reasonOf(f)),
      );
      // the step was sampled and trained: its usage is metered with the firings, once
      await this.hooks.record(this.key(step), firings, recordOf(step, rollbacks, metrics));
      throw new GuardrailStopError(message);
    }
    // The rollback carries the first decisive firing; every other firing of the step is
    // recorded as it is.
    const others = verdict.firings.filter((f) => f !== first);
    if (others.length > 0) {
      await this.hooks.record(
        this.key(step),
        others.map((f) => this.firing(step, f, f.rule.action, reasonOf(f))),
      );
    }
    const scale = Math.min(...decisive.map((f) => f.rule.learningRateScale ?? 1));
    const n = rollbacks + 1;
    const learningRateScale = this.current.learningRateScale * scale;
    const to = this.safe;
    const where = to.path === null ? 'the starting weights' : `the checkpoint at step ${to.step}`;
    const lr = scale === 1 ? '' : `, learning rate ×${learningRateScale}`;
    const reason = `${text}; rolled back to ${where} (rollback ${n} of ${maxRollbacks}${lr})`;
    const done = await this.hooks.rollback({
      key: `${this.key(step)}:rollback`,
      firing: {
        ...this.firing(step, first, 'rollback', reason),
        restored: to,
        rollbacks: n,
        learningRateScale,
      },
      fired: recordOf(step, rollbacks, metrics),
    });
    if (!done) return null;
    this.monitor.rewindTo(to.step);
    this.current = epochOf(this.seed, n, learningRateScale);
    return to;
  }
}
