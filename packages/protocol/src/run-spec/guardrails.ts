// Guardrails of a training run (docs/guardrails.md): declarative rules over the step metrics,
// each a condition on one step-record key and an action when it holds. The field combinations
// are checked here; the metric names against the step-metric key table (../step-metric-keys.ts)
// by the run spec's semantic checks (index.ts) and validateOperatorConfig.
import { Type, type Static } from '@sinclair/typebox';
import type { Issue } from '../document.ts';
import { SPEC_METRIC_PATTERN } from '../names.ts';

export const GUARDRAIL_CONDITIONS = ['above', 'below', 'spike', 'nonFinite'] as const;
export type GuardrailCondition = (typeof GUARDRAIL_CONDITIONS)[number];

/** Mildest first: when several rules fire at one step, the most severe action is taken. */
export const GUARDRAIL_ACTIONS = ['notify', 'pause', 'rollback', 'stop'] as const;
export type GuardrailAction = (typeof GUARDRAIL_ACTIONS)[number];
/** The one schema of an action: a rule's (spec, operator config) and a firing's (events, API). */
export const GuardrailActionSchema = Type.Union(
  GUARDRAIL_ACTIONS.map((a) => Type.Literal(a)),
  {
    description:
      'notify: event + series; pause: checkpoint and pause; rollback: restore the last clean checkpoint; stop: fail the run.',
  },
);

/** Values a spike rule's median is taken over when `window` is left out. */
export const DEFAULT_SPIKE_WINDOW = 20;
/** A spike rule says nothing until it holds this many earlier values. */
export const MIN_SPIKE_HISTORY = 3;
/** Rollbacks a run may take when neither the spec nor the operator config says. */
export const DEFAULT_MAX_ROLLBACKS = 3;

export const GuardrailRule = Type.Object(
  {
    name: Type.Optional(
      Type.String({
        pattern: '^[a-z][a-z0-9-]{0,63}$',
        description: 'Name in events and transitions; default `<metric>-<when>`.',
      }),
    ),
    metric: Type.String({
      pattern: SPEC_METRIC_PATTERN,
      description:
        "A step-record key the run's kind records (docs/metrics.md), e.g. `train_inference_kl`.",
    }),
    when: Type.Union(
      GUARDRAIL_CONDITIONS.map((c) => Type.Literal(c)),
      {
        description:
          'above/below `value`; spike: above `factor` × the median of the last `window` values; nonFinite: NaN or ±Infinity.',
      },
    ),
    value: Type.Optional(Type.Number({ description: 'Threshold of `above` and `below`.' })),
    factor: Type.Optional(
      Type.Number({ exclusiveMinimum: 1, description: 'k of `spike`: value > k × median.' }),
    ),
    window: Type.Optional(
      Type.Integer({
        minimum: MIN_SPIKE_HISTORY,
        maximum: 1000,
        description: `Earlier steps the \`spike\` median is over (default ${DEFAULT_SPIKE_WINDOW}).`,
      }),
    ),
    forSteps: Type.Integer({
      minimum: 1,
      maximum: 1000,
      default: 1,
      description: 'Consecutive steps the condition must hold before the rule fires.',
    }),
    action: GuardrailActionSchema,
    learningRateScale: Type.Optional(
      Type.Number({
        exclusiveMinimum: 0,
        maximum: 1,
        description: 'rollback only: multiply the learning rate by this after restoring.',
      }),
    ),
  },
  { additionalProperties: false },
);
export type GuardrailRule = Static<typeof GuardrailRule>;

export const GuardrailsSection = Type.Object(
  {
    defaults: Type.Boolean({
      default: true,
      description:
        'Also apply the operator default rules (built in: non-finite loss, gradient norm, advantages -> rollback; docs/guardrails.md).',
    }),
    maxRollbacks: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 100,
        description: `Rollbacks before the run fails (default: operator config, else ${DEFAULT_MAX_ROLLBACKS}).`,
      }),
    ),
    rules: Type.Array(GuardrailRule, { maxItems: 32, default: [] }),
  },
  { additionalProperties: false, default: {} },
);
export type GuardrailsSection = Static<typeof GuardrailsSection>;

/** The rule's name: its own, else `<metric>-<when>` with the metric's separators as dashes. */
export function guardrailRuleName(rule: Pick<GuardrailRule, 'name' | 'metric' | 'when'>): string {
  if (rule.name !== undefined) return rule.name;
  const metric = rule.metric.toLowerCase().replace(/[^a-z0-9]+/g, '-');
  return `${metric}-${rule.when.toLowerCase()}`;
}

/** Field combinations JSON Schema does not express; `base` is the rules array's pointer. */
export function guardrailRuleIssues(rules: readonly GuardrailRule[], base: string): Issue[] {
  const issues: Issue[] = [];
  const names = new Set<string>();
  rules.forEach((rule, i) => {
    const at = (field: string) => `${base}/${i}/${field}`;
    const needs = (field: 'value' | 'factor', present: boolean) => {
      if (present && rule[field] === undefined) {
        issues.push({ path: at(field), message: `required when \`when\` is ${rule.when}` });
      }
      if (!present && rule[field] !== undefined) {
        issues.push({ path: at(field), message: `not used when \`when\` is ${rule.when}` });
      }
    };
    needs('value', rule.when === 'above' || rule.when === 'below');
    needs('factor', rule.when === 'spike');
    if (rule.window !== undefined && rule.when !== 'spike') {
      issues.push({ path: at('window'), message: `not used when \`when\` is ${rule.when}` });
    }
    // A non-finite value cannot be recorded and its weights cannot be kept: only a rollback to
    // the last clean checkpoint or a stop make sense.
    if (rule.when === 'nonFinite' && rule.action !== 'rollback' && rule.action !== 'stop') {
      issues.push({
        path: at('action'),
        message: 'a nonFinite rule must roll back or stop (a non-finite step cannot be recorded)',
      });
    }
    if (rule.learningRateScale !== undefined && rule.action !== 'rollback') {
      issues.push({ path: at('learningRateScale'), message: 'only used by action rollback' });
    }
    const name = guardrailRuleName(rule);
    if (names.has(name))
      issues.push({ path: at('name'), message: `duplicate rule name '${name}'` });
    names.add(name);
  });
  return issues;
}

/** What each default protects against is docs/guardrails.md "Defaults". A non-finite loss,
 * gradient norm or advantage means the update that produced it (or is about to use it) poisons
 * the weights: retrying the same batch from the same checkpoint meets the same numbers, so the
 * run goes back to its last clean checkpoint and continues on fresh batches. */
export const BUILT_IN_GUARDRAILS: readonly GuardrailRule[] = [
  { name: 'nonfinite-loss', metric: 'loss', when: 'nonFinite', forSteps: 1, action: 'rollback' },
  {
    name: 'nonfinite-grad-norm',
    metric: 'grad_norm',
    when: 'nonFinite',
    forSteps: 1,
    action: 'rollback',
  },
  {
    name: 'nonfinite-advantages',
    metric: 'advantage/abs_max',
    when: 'nonFinite',
    forSteps: 1,
    action: 'rollback',
  },
];

/** A rule in force for a run, with its name settled and where it came from. */
export type EffectiveGuardrailRule = GuardrailRule & { name: string; origin: 'spec' | 'operator' };

export interface GuardrailPolicy {
  rules: EffectiveGuardrailRule[];
  maxRollbacks: number;
}

/**
 * The rules a run runs with: the operator defaults (the operator config's `guardrails.rules`,
 * else the built-in ones) unless the spec turns them off, then the spec's own; a spec rule
 * named like a default replaces it. `records(metric)` says whether the run's kind records a
 * metric: defaults it does not record are left out (e.g. advantages in sft).
 */
export function guardrailPolicy(
  section: GuardrailsSection,
  operator: { rules?: readonly GuardrailRule[]; maxRollbacks: number },
  records: (metric: string) => boolean,
): GuardrailPolicy {
  const own = section.rules.map((r) => ({
    ...r,
    name: guardrailRuleName(r),
    origin: 'spec' as const,
  }));
  const defaults = section.defaults ? (operator.rules ?? BUILT_IN_GUARDRAILS) : [];
  const kept = defaults
    .map((r) => ({ ...r, name: guardrailRuleName(r), origin: 'operator' as const }))
    .filter((r) => records(r.metric) && !own.some((o) => o.name === r.name));
  return { rules: [...kept, ...own], maxRollbacks: section.maxRollbacks ?? operator.maxRollbacks };
}
