// A sweep document (POST /v1/sweeps, docs/api.md "Sweeps"): a base run spec and a grid of
// values at spec field paths, expanded into one run per grid point. Pure: the control plane
// validates and expands with it; the CLI uses `isSweepDocument` to send a file to the right route.
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import {
  type Issue,
  joinPointer,
  parseSourceText,
  schemaIssues,
  withDefaults,
} from './document.ts';
import { Labels, SPEC_METRIC_PATTERN } from './names.ts';
import { RUN_KINDS, type RunKind } from './run-spec/common.ts';
import { RUN_SPEC_SCHEMAS, validateRunSpec } from './run-spec/index.ts';
import { stepMetricIssue } from './step-metric-records.ts';

/** Most runs one sweep expands into (the product of the grid's value counts). */
export const SWEEP_MAX_RUNS = 64;
/** Most spec fields one grid varies. */
export const SWEEP_MAX_PATHS = 8;
export const SWEEP_ID_PATTERN = '^sweep_[0-9A-HJKMNP-TV-Z]{26}$';
/** A spec field as dot-separated names (`optimizer.learningRate`); a number indexes an array
 * the base spec sets (`data.mix.0.weight`). */
export const GRID_PATH_PATTERN = '^[A-Za-z][A-Za-z0-9]*(\\.([A-Za-z][A-Za-z0-9]*|[0-9]{1,2}))*$';

/** Fields a grid may not vary: one kind per sweep (runs compare like with like), and the
 * identity fields the sweep sets itself. */
const FIXED_FIELDS = new Set(['kind', 'labels', 'name']);

export const SweepSelect = Type.Object(
  {
    metric: Type.String({
      pattern: SPEC_METRIC_PATTERN,
      description: "A step metric of the base spec's kind (its value at the run's latest step).",
    }),
    mode: Type.Union([Type.Literal('max'), Type.Literal('min')], {
      default: 'max',
      description: 'max: the highest value is best; min: the lowest.',
    }),
  },
  { additionalProperties: false, description: 'How the sweep picks its best run.' },
);
export type SweepSelect = Static<typeof SweepSelect>;

export const SweepBudget = Type.Object(
  {
    maxUsd: Type.Number({
      exclusiveMinimum: 0,
      description:
        "USD the whole sweep may spend, split evenly: each run's own `budget.maxUsd` is maxUsd / runs.",
    }),
  },
  { additionalProperties: false },
);

export const SweepSpec = Type.Object(
  {
    kind: Type.Literal('sweep'),
    name: Type.Optional(
      Type.String({ minLength: 1, maxLength: 100, description: 'Display name.' }),
    ),
    labels: Labels,
    base: Type.Record(Type.String(), Type.Unknown(), {
      description: 'A run spec (any kind) every run starts from.',
    }),
    grid: Type.Record(
      Type.String({ pattern: GRID_PATH_PATTERN }),
      Type.Array(Type.Unknown(), { minItems: 1, maxItems: SWEEP_MAX_RUNS }),
      {
        minProperties: 1,
        maxProperties: SWEEP_MAX_PATHS,
        description: `Spec field path -> values; one run per combination (at most ${SWEEP_MAX_RUNS}).`,
      },
    ),
    select: Type.Optional(SweepSelect),
    budget: Type.Optional(SweepBudget),
  },
  { additionalProperties: false, description: 'A sweep: a base run spec and a grid.' },
);
export type SweepSpec = Static<typeof SweepSpec>;

/** One grid point: the values it sets (path -> value) and the run spec they make (not yet
 * validated as a run spec: `validateSweep` does that). */
export interface SweepPoint {
  index: number;
  values: Record<string, unknown>;
  spec: Record<string, unknown>;
}

const checkSweep = TypeCompiler.Compile(SweepSpec);

/** True when `text` is a sweep document (`kind: sweep`), JSON or YAML; false for anything else
 * (a run spec, or text that does not parse: the run route reports that). */
export function isSweepDocument(text: string): boolean {
  const parsed = parseSourceText(text);
  if (!parsed.ok) return false;
  const value = parsed.value.value;
  return (
    typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'sweep'
  );
}

/** The schema of a field at a dot path of a run spec of `kind`; a string saying what is wrong
 * when the path names no field. */
function fieldAt(kind: RunKind, path: string): TSchema | string {
  let schema: TSchema = RUN_SPEC_SCHEMAS[kind];
  const walked: string[] = [];
  for (const segment of path.split('.')) {
    const properties = (schema as { properties?: Record<string, TSchema> }).properties;
    const items = (schema as { items?: TSchema }).items;
    if (/^[0-9]+$/.test(segment) && items !== undefined) schema = items;
    else if (properties?.[segment] !== undefined) schema = properties[segment];
    else {
      const at = walked.length > 0 ? `'${walked.join('.')}'` : `a ${kind} spec`;
      const known = properties ? ` (known: ${Object.keys(properties).sort().join(', ')})` : '';
      return `no field '${segment}' in ${at}${known}`;
    }
    walked.push(segment);
  }
  return schema;
}

/** `base` with `value` set at the dot path; intermediate objects are created, arrays must be
 * in the base. undefined when an array index is missing. */
function setAt(
  base: Record<string, unknown>,
  path: string,
  value: unknown,
): Record<string, unknown> | undefined {
  const root = structuredClone(base);
  let node: Record<string, unknown> | unknown[] = root;
  const segments = path.split('.');
  for (const [i, segment] of segments.entries()) {
    const last = i === segments.length - 1;
    if (Array.isArray(node)) {
      const index = Number(segment);
      if (!(index < node.length)) return undefined;
      if (last) node[index] = value;
      else node = node[index] as Record<string, unknown>;
      continue;
    }
    if (last) node[segment] = value;
    else {
      const next = node[segment];
      if (typeof next !== 'object' || next === null) node[segment] = {};
      node = node[segment] as Record<string, unknown>;
    }
  }
  return root;
}

/** Every grid point, the first path varying slowest. */
function gridPoints(grid: Record<string, unknown[]>): Record<string, unknown>[] {
  let points: Record<string, unknown>[] = [{}];
  for (const [path, values] of Object.entries(grid)) {
    points = points.flatMap((point) => values.map((value) => ({ ...point, [path]: value })));
  }
  return points;
}

/** The number of runs a grid expands into. */
export function gridSize(grid: Record<string, readonly unknown[]>): number {
  return Object.values(grid).reduce((n, values) => n * values.length, 1);
}

/**
 * Where an issue of one expanded run spec belongs in the sweep document: under the grid value
 * that set the field (`/grid/optimizer.learningRate/1`), else under `/base`.
 */
export function sweepIssue(point: SweepPoint, grid: SweepSpec['grid'], issue: Issue): Issue {
  for (const path of Object.keys(point.values)) {
    const pointer = joinPointer(...path.split('.'));
    if (issue.path === pointer || issue.path.startsWith(`${pointer}/`)) {
      const index = grid[path]!.indexOf(point.values[path]);
      return {
        path: joinPointer('grid', path, index),
        message: `${JSON.stringify(point.values[path])} at ${path}: ${issue.message}`,
      };
    }
  }
  return { path: `/base${issue.path}`, message: issue.message };
}

/** Issues de-duplicated by path (every run of a grid repeats a base issue). */
function distinct(issues: Issue[]): Issue[] {
  const byPath = new Map<string, Issue>();
  for (const issue of issues) if (!byPath.has(issue.path)) byPath.set(issue.path, issue);
  return [...byPath.values()];
}

export type SweepParse =
  | { ok: true; sweep: SweepSpec; kind: RunKind; points: SweepPoint[] }
  | { ok: false; tooLarge: boolean; errors: Issue[] };

/**
 * Parses a sweep document (JSON or YAML) and expands its grid: the sweep's own fields, each
 * grid path against the base's kind, the grid's size (at most SWEEP_MAX_RUNS), `select` against
 * the kind's step metrics, and every expanded run spec, its issues placed under the grid value
 * or the base field that caused them.
 */
export function parseSweep(text: string): SweepParse {
  const source = parseSourceText(text);
  if (!source.ok) return { ok: false, tooLarge: false, errors: source.errors };
  const { value, lineOf } = source.value;
  const withLine = (issue: Issue): Issue => {
    const line = lineOf(issue.path);
    return line === undefined ? issue : { ...issue, line };
  };
  const defaulted = withDefaults<unknown>(SweepSpec, value);
  if (!checkSweep.Check(defaulted)) {
    return { ok: false, tooLarge: false, errors: schemaIssues(SweepSpec, defaulted, lineOf) };
  }
  const sweep = defaulted as SweepSpec;
  const kind = sweep.base.kind;
  if (typeof kind !== 'string' || !(RUN_KINDS as readonly string[]).includes(kind)) {
    const message = `expected one of ${RUN_KINDS.join(', ')}`;
    return { ok: false, tooLarge: false, errors: [withLine({ path: '/base/kind', message })] };
  }
  const runKind = kind as RunKind;
  const issues: Issue[] = [];
  for (const path of Object.keys(sweep.grid)) {
    const at = joinPointer('grid', path);
    const field = fieldAt(runKind, path);
    if (FIXED_FIELDS.has(path.split('.')[0]!)) {
      issues.push({
        path: at,
        message: `'${path}' cannot be swept (one kind, labels and name per sweep)`,
      });
    } else if (typeof field === 'string') issues.push({ path: at, message: field });
    else if (sweep.budget && path.split('.')[0] === 'budget') {
      issues.push({ path: at, message: "the sweep's `budget` sets each run's budget" });
    }
  }
  if (sweep.budget && sweep.base.budget !== undefined) {
    issues.push({
      path: '/base/budget',
      message: "remove it: the sweep's `budget` is split over its runs",
    });
  }
  if (sweep.select) {
    const issue = stepMetricIssue(runKind, sweep.select.metric, '/select/metric');
    if (issue) issues.push(issue);
  }
  if (issues.length > 0) return { ok: false, tooLarge: false, errors: issues.map(withLine) };
  const size = gridSize(sweep.grid);
  if (size > SWEEP_MAX_RUNS) {
    const counts = Object.entries(sweep.grid).map(([p, v]) => `${v.length} (${p})`);
    const message = `the grid expands into ${size} runs (${counts.join(' × ')}); at most ${SWEEP_MAX_RUNS}`;
    return { ok: false, tooLarge: true, errors: [withLine({ path: '/grid', message })] };
  }
  const points: SweepPoint[] = [];
  for (const [index, values] of gridPoints(sweep.grid).entries()) {
    let spec: Record<string, unknown> | undefined = sweep.base;
    for (const [path, v] of Object.entries(values)) {
      spec = spec && setAt(spec, path, v);
      if (!spec) {
        const array = path.split('.').slice(0, -1).join('.');
        issues.push({
          path: joinPointer('grid', path),
          message: `the base spec sets no such element of '${array}'`,
        });
        break;
      }
    }
    if (spec) points.push({ index, values, spec });
  }
  if (issues.length > 0)
    return { ok: false, tooLarge: false, errors: distinct(issues).map(withLine) };
  for (const point of points) {
    const parsed = validateRunSpec(point.spec);
    if (!parsed.ok) issues.push(...parsed.errors.map((e) => sweepIssue(point, sweep.grid, e)));
  }
  if (issues.length > 0)
    return { ok: false, tooLarge: false, errors: distinct(issues).map(withLine) };
  return { ok: true, sweep, kind: runKind, points };
}
