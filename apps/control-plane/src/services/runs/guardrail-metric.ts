// A guardrail rule's `metric` must be a step-record key the run's kind records (the step-metric
// table of @anneal/telemetry, which the run-spec schema cannot see): refused at submission,
// naming the rule's field (docs/guardrails.md "Rules"). Operator default rules are not checked
// here: a default naming a metric a kind does not record does not apply to that kind.
import type { Issue, RunSpec } from '@anneal/protocol';
import { AnnealError } from '../../errors.ts';
import { stepMetricKeys } from './retention-metric.ts';

export function checkGuardrailMetrics(spec: RunSpec): void {
  if (spec.kind === 'eval') return;
  const known = stepMetricKeys(spec.kind);
  const issues: Issue[] = spec.guardrails.rules.flatMap((rule, i) =>
    known.includes(rule.metric)
      ? []
      : [
          {
            path: `/guardrails/rules/${i}/metric`,
            message: `'${rule.metric}' is not a step metric of ${spec.kind} runs (known: ${known.join(', ')})`,
          },
        ],
  );
  if (issues.length === 0) return;
  const text = issues.map((i) => `${i.path}: ${i.message}`).join('\n');
  throw new AnnealError('ANNEAL_ERR_RUN_SPEC_INVALID', text, issues);
}
