// The run spec: one schema per kind, dispatched on `kind`, defaults applied, errors as JSON pointers.
import { Type, type Static } from '@sinclair/typebox';
import {
  type Issue,
  type Parsed,
  joinPointer,
  parseSourceText,
  schemaIssues,
  withDefaults,
} from '../document.ts';
import { RUN_KINDS, type RunKind } from './common.ts';
import { EvalSpec } from './eval.ts';
import { GrpoSpec } from './grpo.ts';
import { RmSpec } from './rm.ts';
import { SftSpec } from './sft.ts';

export * from './common.ts';
export { SftSpec } from './sft.ts';
export { RmSpec } from './rm.ts';
export { GrpoSpec } from './grpo.ts';
export { EvalSpec } from './eval.ts';

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

function isRunKind(value: unknown): value is RunKind {
  return typeof value === 'string' && (RUN_KINDS as readonly string[]).includes(value);
}

/** Checks JSON Schema cannot express: exactly-one model source, distinct mix sources. */
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
  return issues;
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
  const issues = schemaIssues(schema, defaulted, lineOf);
  if (issues.length > 0) return { ok: false, errors: issues };
  const spec = defaulted as RunSpec;
  const semantic = semanticIssues(spec).map(withLine);
  return semantic.length > 0 ? { ok: false, errors: semantic } : { ok: true, value: spec };
}

/** Parses JSON or YAML run-spec text, applies defaults, and reports errors with JSON pointers. */
export function parseRunSpec(text: string): Parsed<RunSpec> {
  const source = parseSourceText(text);
  if (!source.ok) return source;
  return validateRunSpec(source.value.value, source.value.lineOf);
}
