// Records read back from where they were stored (a Redis key, a run file) are checked against
// their schema here, not cast: a record written by an older or newer worker, or damaged, fails
// where it is read with the key or file and the field, never deep in a page render or a loop.
// Each schema is compiled once (TypeCompiler), so the check is cheap beside the JSON.parse.
import { FormatRegistry, type Static, type TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';

/** A stored record that is not JSON or does not match its schema. */
export class StoredRecordError extends Error {
  constructor(
    /** Where the record was read: a Redis key (with the hash field or stream id), a file. */
    readonly source: string,
    /** The field at fault, as a JSON pointer (`/metrics/loss`); '' for the record as a whole. */
    readonly field: string,
    detail: string,
  ) {
    super(`stored record ${source}${field ? ` field ${field}` : ''}: ${detail}`);
    this.name = 'StoredRecordError';
  }
}

// RFC 3339 date-time, as the API schemas declare it (`format: 'date-time'`). TypeBox checks only
// registered formats and fails the others, so the stored records' timestamps need this.
const DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$/;

/** Where a record was read, or a function naming it (called only when the record is at fault,
 * so a reader of many records builds no name for each). */
export type StoredSource = string | (() => string);

const named = (source: StoredSource) => (typeof source === 'string' ? source : source());

const compiled = new WeakMap<TSchema, TypeCheck<TSchema>>();

function checker<T extends TSchema>(schema: T): TypeCheck<T> {
  let check = compiled.get(schema);
  if (!check) {
    if (!FormatRegistry.Has('date-time')) FormatRegistry.Set('date-time', (v) => DATE_TIME.test(v));
    check = TypeCompiler.Compile(schema);
    compiled.set(schema, check);
  }
  return check as TypeCheck<T>;
}

/** `value` (already parsed) if it matches `schema`; else a StoredRecordError naming `source`
 * and the first field at fault. */
export function checkStored<T extends TSchema>(
  schema: T,
  value: unknown,
  source: StoredSource,
): Static<T> {
  const check = checker(schema);
  if (check.Check(value)) return value;
  const first = check.Errors(value).First();
  throw new StoredRecordError(
    named(source),
    first?.path ?? '',
    `${first?.message ?? 'does not match its schema'} (written by another version?)`,
  );
}

/** JSON text read from `source`, parsed and checked against `schema` (checkStored). `upgrade`
 * first brings an object an older version wrote under old field names to the current ones
 * (renamed-fields.ts); it may mutate what it is given. */
export function parseStored<T extends TSchema>(
  schema: T,
  text: string,
  source: StoredSource,
  upgrade?: (value: object) => unknown,
): Static<T> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new StoredRecordError(named(source), '', `not JSON (${(error as Error).message})`);
  }
  if (upgrade && typeof value === 'object' && value !== null) value = upgrade(value);
  return checkStored(schema, value, source);
}

/** A line of an append-only JSON-lines file: undefined when it is not JSON (the line a killed
 * writer left cut short), else checked as by parseStored. */
export function parseStoredLine<T extends TSchema>(
  schema: T,
  line: string,
  source: StoredSource,
): Static<T> | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  return checkStored(schema, value, source);
}
