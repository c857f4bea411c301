// Just enough PromQL handling for cross-checks: which series names an expression selects, and
// Grafana's template variables replaced by concrete values. Parsing proper is promtool's job.

const KEYWORDS = new Set([
  'and',
  'or',
  'unless',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'offset',
  'atan2',
  'inf',
  'nan',
]);

const STRINGS = /"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g;
const BRACES = /\{[^{}]*\}/g;
const BRACKETS = /\[[^[\]]*\]/g;
const GROUPING = /\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)/g;
const NUMBERS =
  /(?<![A-Za-z0-9_:$])(?:0x[0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?(?:ms|[smhdwy])?)/g;
const IDENTIFIER = /[A-Za-z_:][A-Za-z0-9_:]*/g;

/**
 * Names of the series an expression selects (metric names and recording-rule names), in order
 * of first appearance. Function names, keywords, label names and literals are left out.
 */
export function seriesNamesIn(expr: string): string[] {
  const stripped = expr
    .replace(STRINGS, ' ')
    .replace(BRACES, ' ')
    .replace(BRACKETS, ' ')
    .replace(GROUPING, ' ')
    .replace(/\$\{?[A-Za-z_]\w*\}?/g, ' ')
    .replace(NUMBERS, ' ');
  const names: string[] = [];
  for (const match of stripped.matchAll(IDENTIFIER)) {
    const name = match[0];
    const after = stripped.slice((match.index ?? 0) + name.length);
    if (/^\s*\(/.test(after)) continue; // a function call
    if (KEYWORDS.has(name.toLowerCase())) continue;
    if (!names.includes(name)) names.push(name);
  }
  return names;
}

/** Grafana's built-in interval variables, as PromQL durations. */
export const GRAFANA_INTERVALS: Readonly<Record<string, string>> = {
  __rate_interval: '1m',
  __interval: '15s',
  __range: '1h',
};

/**
 * Replaces `$var` / `${var}` / `[[var]]` with `values[var]` (interval variables default to
 * GRAFANA_INTERVALS). Throws naming the variable when no value is known.
 */
export function expandGrafanaVariables(expr: string, values: Record<string, string> = {}): string {
  const lookup = (name: string): string => {
    const value = values[name] ?? GRAFANA_INTERVALS[name];
    if (value === undefined) throw new Error(`no value for Grafana variable $${name} in: ${expr}`);
    return value;
  };
  return expr
    .replace(/\$\{(\w+)(?::\w+)?\}/g, (_, name: string) => lookup(name))
    .replace(/\[\[(\w+)\]\]/g, (_, name: string) => lookup(name))
    .replace(/\$(\w+)/g, (_, name: string) => lookup(name));
}

/** The metric of a Grafana `label_values(metric, label)` variable query. */
export function labelValuesMetric(definition: string): string {
  const match =
    /^label_values\(\s*([A-Za-z_:][A-Za-z0-9_:]*)\s*(?:\{[^}]*\})?\s*,\s*\w+\s*\)$/.exec(
      definition.trim(),
    );
  if (!match?.[1])
    throw new Error(`unsupported variable query (want label_values(metric, label)): ${definition}`);
  return match[1];
}
