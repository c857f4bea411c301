// Tiny field validators that collect every problem with its field path
// (`answer: must be a non-empty string`, `rubrics[1].check.type: must be one of …`).

export interface FieldIssue {
  path: string;
  message: string;
}

export type Json = Record<string, unknown>;

export class Issues {
  readonly list: FieldIssue[] = [];
  add(path: string, message: string): void {
    this.list.push({ path, message });
  }
}

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function join(base: string, key: string | number): string {
  if (typeof key === 'number') return `${base}[${key}]`;
  return base ? `${base}.${key}` : key;
}

/** Report fields not in `allowed` (catches typos such as `qestion`). */
export function noUnknownFields(
  obj: Json,
  allowed: readonly string[],
  base: string,
  issues: Issues,
): void {
  for (const key of Object.keys(obj)) {
    if (!allowed.includes(key)) issues.add(join(base, key), 'unknown field');
  }
}

export function nonEmptyString(
  obj: Json,
  key: string,
  base: string,
  issues: Issues,
): string | undefined {
  const value = obj[key];
  if (typeof value === 'string' && value.trim().length > 0) return value;
  issues.add(
    join(base, key),
    value === undefined ? 'is required (non-empty string)' : 'must be a non-empty string',
  );
  return undefined;
}

export function optionalString(
  obj: Json,
  key: string,
  base: string,
  issues: Issues,
): string | undefined {
  const value = obj[key];
  if (value === undefined || typeof value === 'string') return value;
  issues.add(join(base, key), 'must be a string');
  return undefined;
}

/** An array whose every item passes `item`; `minItems` defaults to 1. */
export function arrayOf<T>(
  obj: Json,
  key: string,
  base: string,
  issues: Issues,
  item: (value: unknown, path: string) => T | undefined,
  minItems = 1,
): T[] | undefined {
  const value = obj[key];
  const path = join(base, key);
  if (!Array.isArray(value)) {
    issues.add(path, value === undefined ? 'is required (array)' : 'must be an array');
    return undefined;
  }
  if (value.length < minItems) issues.add(path, `must have at least ${minItems} item(s)`);
  const items = value.map((v, i) => item(v, join(path, i)));
  return items.every((v) => v !== undefined) ? (items as T[]) : undefined;
}

export function stringItem(issues: Issues): (value: unknown, path: string) => string | undefined {
  return (value, path) => {
    if (typeof value === 'string' && value.trim().length > 0) return value;
    issues.add(path, 'must be a non-empty string');
    return undefined;
  };
}
