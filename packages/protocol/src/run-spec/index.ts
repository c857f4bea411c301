// The run spec: one schema per kind, dispatched on `kind`, defaults applied, errors as JSON pointers.
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import {
  type Issue,
  type Parsed,
  joinPointer,
  parseJsonText,
  parseSourceText,
  schemaIssues,
  withDefaults,
} from '../document.ts';
import { STEP_METRIC_KEYS } from '../step-metric-keys.ts';
import { stepMetricIssue } from '../step-metric-records.ts';
import { RUN_KINDS, type RunKind } from './common.ts';
import { EvalSpec } from './eval.ts';
import { guardrailRuleIssues } from './guardrails.ts';
import { GrpoSpec } from './grpo.ts';
import { RmSpec } from './rm.ts';
import { SftSpec } from './sft.ts';

export * from './common.ts';
export { SftSpec } from './sft.ts';
export { RmSpec } from './rm.ts';
export { GrpoSpec, MAX_POLICY_LAG, MIN_PROBE_ROLLOUTS, MISMATCH_PROBE_FRACTION } from './grpo.ts';
export { EvalSpec } from './eval.ts';
export * from './guardrails.ts';

export const RUN_SPEC_SCHEMAS = {
  sft: SftSpec,
  rm: RmSpec,
  grpo: GrpoSpec,
  eval: EvalSpec,
} as const;

/** Any run spec (the union documented in OpenAPI; validation dispatches on `kind`). */
export const RunSpec = Type.Union([SftSpec, RmSpec, GrpoSpec, EvalSpec], {
  description: 'Run spec; `kind` selects the schema. See docs/api.md "Run spec reference".',
});
export type RunSpec = Static<typeof RunSpec>;

/** Compiled checkers (the valid path skips the slower error walk). Built on first use. */
const compiled = new Map<RunKind, TypeCheck<TSchema>>();
function checker(kind: RunKind): TypeCheck<TSchema> {
  let check = compiled.get(kind);
  if (!check) {
    check = TypeCompiler.Compile(RUN_SPEC_SCHEMAS[kind]);
    compiled.set(kind, check);
  }
  return check;
}

function isRunKind(value: unknown): value is RunKind {
  return typeof value === 'string' && (RUN_KINDS as readonly string[]).includes(value);
}

/** Checks JSON Schema cannot express: exactly-one model source, distinct mix sources, guardrail
 * field combinations, and that guardrail rules and `keepBest` name a step metric the kind
 * records (the step-metric key table, ../step-metric-keys.ts). */
function semanticIssues(spec: RunSpec): Issue[] {
  const issues: Issue[] = [];
  if (spec.model) {
    const sources = [spec.model.checkpoint, spec.model.base].filter((s) => s !== undefined);
    if (sources.length !== 1) {
      issues.push({ path: '/model', message: 'set exactly one of `checkpoint` or `base`' });
    }
  }
  if ('data' in spec) {
    const seen = new Set<string>();
    spec.data.mix.forEach((entry, i) => {
      if (seen.has(entry.source)) {
        issues.push({
          path: joinPointer('data', 'mix', i, 'source'),
          message: `duplicate source '${entry.source}'`,
        });
      }
      seen.add(entry.source);
    });
  }
  if (spec.kind !== 'eval') {
    issues.push(...guardrailRuleIssues(spec.guardrails.rules, '/guardrails/rules'));
    spec.guardrails.rules.forEach((rule, i) => {
      const issue = stepMetricIssue(spec.kind, rule.metric, `/guardrails/rules/${i}/metric`);
      if (issue) issues.push(issue);
    });
    if (spec.kind === 'grpo') issues.push(...sparseMismatchIssues(spec));
    const keepBest = spec.checkpointRetention?.keepBest;
    const path = '/checkpointRetention/keepBest/metric';
    const issue = keepBest && stepMetricIssue(spec.kind, keepBest.metric, path);
    if (issue) issues.push(issue);
  }
  return issues;
}

/** With `rollout.probeEvery` k > 1 a pipelined run records `mismatch_kl` at every k-th step
 * only, and a step without the metric ends a rule's streak (docs/guardrails.md): a rule on it
 * that needs two consecutive steps could never fire. */
function sparseMismatchIssues(spec: Extract<RunSpec, { kind: 'grpo' }>): Issue[] {
  const { maxPolicyLag, probeEvery } = spec.rollout;
  if (maxPolicyLag === 0 || probeEvery === 1) return [];
  return spec.guardrails.rules.flatMap((rule, i) =>
    rule.metric === STEP_METRIC_KEYS.mismatchKl.key && rule.forSteps > 1
      ? [
          {
            path: `/guardrails/rules/${i}/forSteps`,
            message: `mismatch_kl is recorded every ${probeEvery} steps (rollout.probeEvery) and a step without it ends a streak: use forSteps 1, or rollout.probeEvery 1`,
          },
        ]
      : [],
  );
}

/** Validates an already-parsed value as a run spec and applies defaults. */
export function validateRunSpec(
  value: unknown,
  lineOf?: (pointer: string) => number | undefined,
): Parsed<RunSpec> {
  const withLine = (issue: Issue): Issue => {
    const line = lineOf?.(issue.path);
    return line === undefined ? issue : { ...issue, line };
  };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, errors: [{ path: '', message: 'a run spec must be an object' }] };
  }
  const kind = (value as { kind?: unknown }).kind;
  if (!isRunKind(kind)) {
    const message =
      kind === undefined
        ? `required field is missing (one of ${RUN_KINDS.join(', ')})`
        : `expected one of ${RUN_KINDS.join(', ')}`;
    return { ok: false, errors: [withLine({ path: '/kind', message })] };
  }
  const schema = RUN_SPEC_SCHEMAS[kind];
  const defaulted = withDefaults<unknown>(schema, value);
  const issues = checker(kind).Check(defaulted) ? [] : schemaIssues(schema, defaulted, lineOf);
  if (issues.length > 0) return { ok: false, errors: issues };
  const spec = defaulted as RunSpec;
  const semantic = semanticIssues(spec).map(withLine);
  return semantic.length > 0 ? { ok: false, errors: semantic } : { ok: true, value: spec };
}

/** Parses JSON or YAML run-spec text, applies defaults, and reports errors with JSON pointers. */
export function parseRunSpec(text: string): Parsed<RunSpec> {
  // Fast path for valid JSON; anything else goes through the YAML parser, which keeps lines.
  if (text.trimStart().startsWith('{')) {
    const json = parseJsonText(text);
    if (json !== undefined && !json.ok) return json;
    if (json !== undefined) {
      const fast = validateRunSpec(json.value);
      if (fast.ok) return fast;
      // Invalid: parse again as YAML only to add source lines to the same issues.
    }
  }
  const source = parseSourceText(text);
  if (!source.ok) return source;
  return validateRunSpec(source.value.value, source.value.lineOf);
}
