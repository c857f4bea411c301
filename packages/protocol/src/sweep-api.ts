// Response shapes of the sweep and comparison routes (GET /v1/sweeps/{id}, GET /v1/sweeps,
// GET /v1/runs/compare), and the spec difference both show: the spec fields whose value is not
// the same in every run compared.
import { Type, type Static } from '@sinclair/typebox';
import { RunKindSchema } from './run-spec/kind.ts';
import { RunStateSchema } from './run-state.ts';
import type { RunState } from './run-states.ts';
import { SweepSelect } from './sweep-spec.ts';

const count = () => Type.Integer({ minimum: 0 });

/** Runs in each state (every state present, 0 when none). */
export const SweepCounts = Type.Object(
  {
    queued: count(),
    running: count(),
    retrying: count(),
    paused: count(),
    succeeded: count(),
    failed: count(),
    cancelled: count(),
  } satisfies Record<RunState, unknown>,
  { additionalProperties: false, description: 'Runs of the sweep in each state.' },
);

const SweepHead = {
  id: Type.String(),
  tenant: Type.String(),
  name: Type.Optional(Type.String()),
  labels: Type.Record(Type.String(), Type.String()),
  kind: RunKindSchema,
  createdAt: Type.String({ format: 'date-time' }),
  grid: Type.Record(Type.String(), Type.Array(Type.Unknown())),
  select: Type.Optional(SweepSelect),
  budget: Type.Optional(
    Type.Object({
      maxUsd: Type.Number(),
      perRunUsd: Type.Number({ description: "Each run's own budget (maxUsd / runs)." }),
    }),
  ),
  counts: SweepCounts,
  done: Type.Boolean({ description: 'Every run has ended (succeeded, failed or cancelled).' }),
};

export const SweepRun = Type.Object({
  id: Type.String(),
  state: RunStateSchema,
  values: Type.Record(Type.String(), Type.Unknown(), {
    description: 'The grid values this run was given (path -> value).',
  }),
  lastStep: Type.Optional(Type.Integer()),
  metric: Type.Optional(
    Type.Union([Type.Number(), Type.Null()], {
      description: "`select.metric` at the run's latest step; null when it has not recorded it.",
    }),
  ),
});

export const SweepResource = Type.Object({
  ...SweepHead,
  runs: Type.Array(SweepRun, { description: 'In grid order (the first grid path slowest).' }),
  best: Type.Union([Type.Object({ runId: Type.String(), value: Type.Number() }), Type.Null()], {
    description: 'The run with the best `select.metric`; null without `select` or a value.',
  }),
});
export type SweepResource = Static<typeof SweepResource>;

export const SweepSummary = Type.Object({ ...SweepHead, runCount: Type.Integer() });
export type SweepSummary = Static<typeof SweepSummary>;

export const SweepList = Type.Object({
  sweeps: Type.Array(SweepSummary),
  nextCursor: Type.Union([Type.String(), Type.Null()], {
    description: 'Pass as `cursor` to get the next page; null at the end.',
  }),
});
export type SweepList = Static<typeof SweepList>;

export const ComparedRun = Type.Object({
  id: Type.String(),
  name: Type.Optional(Type.String()),
  state: RunStateSchema,
  lastStep: Type.Optional(Type.Integer()),
  differences: Type.Record(Type.String(), Type.Unknown(), {
    description: "This run's value of each differing field (absent: the run does not set it).",
  }),
  final: Type.Union(
    [
      Type.Object({
        step: Type.Integer(),
        metrics: Type.Record(Type.String(), Type.Union([Type.Number(), Type.Null()])),
      }),
      Type.Null(),
    ],
    { description: 'The metrics of its latest committed step; null before its first.' },
  ),
});

export const RunComparison = Type.Object({
  kind: RunKindSchema,
  fields: Type.Array(Type.String(), {
    description: 'Spec fields (dot paths) whose value differs between the runs, sorted.',
  }),
  runs: Type.Array(ComparedRun, { description: 'In the order asked.' }),
});
export type RunComparison = Static<typeof RunComparison>;

/** Fields a comparison leaves out: a run's identity, not its configuration. */
const IDENTITY_FIELDS = new Set(['name', 'labels']);

/** Leaf values of a spec by dot path (arrays are one value each). */
function leaves(value: unknown, prefix: string, out: Map<string, unknown>): void {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const [key, child] of Object.entries(value as Record<string, unknown>)) {
      if (prefix === '' && IDENTITY_FIELDS.has(key)) continue;
      leaves(child, prefix === '' ? key : `${prefix}.${key}`, out);
    }
  } else out.set(prefix, value);
}

/** JSON with sorted keys: two values are the same field value when these are equal. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    );
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'undefined';
}

/**
 * The spec fields whose value is not the same in every spec (a field some spec lacks differs),
 * sorted, and each spec's values of them. Names and labels are left out.
 */
export function specDifferences(specs: readonly Record<string, unknown>[]): {
  fields: string[];
  values: Record<string, unknown>[];
} {
  const flat = specs.map((spec) => {
    const out = new Map<string, unknown>();
    leaves(spec, '', out);
    return out;
  });
  const all = new Set(flat.flatMap((m) => [...m.keys()]));
  const fields = [...all]
    .filter((field) => new Set(flat.map((m) => canonical(m.get(field)))).size > 1)
    .sort();
  const values = flat.map((m) =>
    Object.fromEntries(fields.filter((f) => m.has(f)).map((f) => [f, m.get(f)])),
  );
  return { fields, values };
}
