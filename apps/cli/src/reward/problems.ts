// A validation problem: which field (a path like `rollouts[2].preference`, or `$` for the whole
// line) and what is wrong with it. Printed as `line N: <field>: <problem>`.

export interface FieldProblem {
  field: string;
  problem: string;
}

/** A short rendering of an offending value for messages (JSON, cut to 40 characters). */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}
