// An alert expression returns data only while it fires. To check against a live Prometheus that
// an alert's inputs exist (every series it reads, joined the way it joins them), evaluate its
// "probe" instead: the same expression with every comparison turned into its `bool` form
// (`x > 900` -> `x > bool 900`: 0 or 1 instead of a filter) and `offset` modifiers dropped (a
// short test has no data from 15 minutes ago; the windows stay). The probe returns data exactly
// when the alert's inner series exist; whether the threshold holds no longer matters.

const COMPARISON = /^(==|!=|>=|<=|>|<)/;
const OFFSET = /^offset\s+-?(?:\d+(?:ms|[smhdwy]))+/;

/** Copies a quoted string, a `{…}` matcher list or a `[…]` range verbatim; returns its end. */
function skipLiteral(expr: string, start: number): number {
  const open = expr[start];
  if (open === '"' || open === "'" || open === '`') {
    let i = start + 1;
    while (i < expr.length && expr[i] !== open) i += expr[i] === '\\' && open !== '`' ? 2 : 1;
    return i + 1;
  }
  const close = open === '{' ? '}' : ']';
  let i = start + 1;
  while (i < expr.length && expr[i] !== close) {
    i = expr[i] === '"' || expr[i] === "'" || expr[i] === '`' ? skipLiteral(expr, i) : i + 1;
  }
  return i + 1;
}

/** The alert expression with `bool` comparisons and no `offset` (see the file comment). */
export function alertProbe(expr: string): string {
  let out = '';
  let i = 0;
  while (i < expr.length) {
    const c = expr[i]!;
    if (c === '"' || c === "'" || c === '`' || c === '{' || c === '[') {
      const end = skipLiteral(expr, i);
      out += expr.slice(i, end);
      i = end;
      continue;
    }
    const rest = expr.slice(i);
    const previous = out.at(-1) ?? ' ';
    const offset = /[\w:]/.test(previous) ? null : OFFSET.exec(rest);
    if (offset) {
      i += offset[0].length;
      continue;
    }
    const comparison = COMPARISON.exec(rest);
    if (comparison) {
      const op = comparison[0];
      out += op;
      i += op.length;
      if (!/^\s*bool\b/.test(expr.slice(i))) out += ' bool';
      continue;
    }
    out += c;
    i += 1;
  }
  return out.trim();
}
