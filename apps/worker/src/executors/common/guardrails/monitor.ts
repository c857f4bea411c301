// The guardrail rules evaluated step by step (docs/guardrails.md "Conditions"): each rule keeps
// its streak (consecutive steps its condition held) and, for `spike`, the finite values of the
// steps before (the running median's window). State is a function of the kept step history, so
// a resumed run rebuilds it from its committed records and a rollback replays the history up to
// the restored checkpoint: the taken-back steps no longer count.
import {
  DEFAULT_SPIKE_WINDOW,
  GUARDRAIL_ACTIONS,
  MIN_SPIKE_HISTORY,
  type EffectiveGuardrailRule,
  type GuardrailAction,
  type GuardrailValue,
} from '@anneal/protocol';

type Value = number | null | undefined;

export interface RuleFiring {
  rule: EffectiveGuardrailRule;
  /** The metric over the streak that fired the rule, oldest first. */
  values: { step: number; value: GuardrailValue }[];
  /** spike: the median the last value was compared with. */
  median?: number;
}

export interface StepVerdict {
  firings: RuleFiring[];
  /** No rule's condition held at this step: a checkpoint here is a clean rollback target. */
  quiet: boolean;
  /** The most severe action among the firings (null: none fired). */
  action: GuardrailAction | null;
}

/** JSON has no NaN or Infinity: those travel as strings. */
export function guardrailValue(value: Value): GuardrailValue {
  if (value === undefined || value === null) return null;
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return 'Infinity';
  if (value === -Infinity) return '-Infinity';
  return value;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

class RuleState {
  private streak: { step: number; value: number }[] = [];
  private window: number[] = [];

  constructor(readonly rule: EffectiveGuardrailRule) {}

  /** Whether the condition holds for `value`, and the median a spike compared it with. */
  private holds(value: Value): { holds: boolean; median?: number } {
    if (typeof value !== 'number') return { holds: false };
    const { rule } = this;
    switch (rule.when) {
      case 'above':
        return { holds: value > rule.value! };
      case 'below':
        return { holds: value < rule.value! };
      case 'nonFinite':
        return { holds: !Number.isFinite(value) };
      case 'spike': {
        // A spike of a non-positive baseline means nothing: such a rule stays silent.
        if (this.window.length < MIN_SPIKE_HISTORY) return { holds: false };
        const m = median(this.window);
        return m > 0 ? { holds: value > rule.factor! * m, median: m } : { holds: false };
      }
    }
  }

  observe(step: number, value: Value): { holds: boolean; firing?: RuleFiring } {
    const { holds, median } = this.holds(value);
    if (typeof value === 'number' && Number.isFinite(value)) {
      this.window.push(value);
      if (this.window.length > (this.rule.window ?? DEFAULT_SPIKE_WINDOW)) this.window.shift();
    }
    if (!holds) {
      this.streak = [];
      return { holds };
    }
    this.streak.push({ step, value: value! });
    if (this.streak.length < this.rule.forSteps) return { holds };
    // Fired: the streak starts over, so a condition that persists fires every forSteps steps.
    const values = this.streak.map((s) => ({ step: s.step, value: guardrailValue(s.value) }));
    this.streak = [];
    return { holds, firing: { rule: this.rule, values, ...(median !== undefined && { median }) } };
  }
}

const severity = (action: GuardrailAction) => GUARDRAIL_ACTIONS.indexOf(action);

export class GuardrailMonitor {
  private states: RuleState[];
  /** Each observed step's values of the rules' metrics, for a replay after a rollback. */
  private readonly history = new Map<number, Record<string, Value>>();

  constructor(readonly rules: readonly EffectiveGuardrailRule[]) {
    this.states = rules.map((r) => new RuleState(r));
  }

  observe(step: number, metrics: Readonly<Record<string, Value>>): StepVerdict {
    const kept: Record<string, Value> = {};
    for (const r of this.rules) kept[r.metric] = metrics[r.metric];
    this.history.set(step, kept);
    const firings: RuleFiring[] = [];
    let quiet = true;
    for (const state of this.states) {
      const { holds, firing } = state.observe(step, metrics[state.rule.metric]);
      if (holds) quiet = false;
      if (firing) firings.push(firing);
    }
    const action = firings.reduce<GuardrailAction | null>(
      (worst, f) =>
        worst === null || severity(f.rule.action) > severity(worst) ? f.rule.action : worst,
      null,
    );
    return { firings, quiet, action };
  }

  /** Forgets every step after `step` and rebuilds the rules' state from the steps up to it. */
  rewindTo(step: number): void {
    const kept = [...this.history.entries()].filter(([s]) => s <= step).sort(([a], [b]) => a - b);
    this.history.clear();
    this.states = this.rules.map((r) => new RuleState(r));
    for (const [s, metrics] of kept) this.observe(s, metrics);
  }
}
