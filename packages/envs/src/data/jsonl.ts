// JSONL datasets validated before any GPU time is spent: every bad row is reported with its line
// number and field path, all errors collected (`line 7: answer: must be a non-empty string`).
import { readFile } from 'node:fs/promises';
import { Issues, isObject } from './fields.ts';
import { DATASET_KINDS, ROW_VALIDATORS } from './schemas.ts';
import type { DatasetKind, DatasetRows } from './schemas.ts';

export interface RowError {
  /** 1-based line number in the file. */
  line: number;
  /** Field path in the row ('' for the row itself). */
  path: string;
  message: string;
}

export interface ValidationResult<T> {
  rows: T[];
  /** Line number of each row, for later messages. */
  lines: number[];
  errors: RowError[];
}

export function formatRowError(error: RowError): string {
  return error.path
    ? `line ${error.line}: ${error.path}: ${error.message}`
    : `line ${error.line}: ${error.message}`;
}

export class DatasetError extends Error {
  override readonly name = 'DatasetError';
  constructor(
    readonly source: string,
    readonly errors: readonly RowError[],
  ) {
    const shown = errors.slice(0, 20).map(formatRowError).join('\n  ');
    const more = errors.length > 20 ? `\n  … and ${errors.length - 20} more` : '';
    super(`${source}: ${errors.length} invalid row(s)\n  ${shown}${more}`);
  }
}

export function isDatasetKind(kind: string): kind is DatasetKind {
  return (DATASET_KINDS as readonly string[]).includes(kind);
}

/** Validate JSONL text; blank lines are skipped, every other line must be a valid row. */
export function validateJsonl<K extends DatasetKind>(
  kind: K,
  text: string,
): ValidationResult<DatasetRows[K]> {
  const validate = ROW_VALIDATORS[kind];
  const result: ValidationResult<DatasetRows[K]> = { rows: [], lines: [], errors: [] };
  const lines = text.split(/\r?\n/);
  lines.forEach((raw, index) => {
    const line = index + 1;
    if (raw.trim().length === 0) return;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (err) {
      result.errors.push({ line, path: '', message: `invalid JSON (${(err as Error).message})` });
      return;
    }
    if (!isObject(value)) {
      result.errors.push({ line, path: '', message: 'must be a JSON object' });
      return;
    }
    const issues = new Issues();
    const row = validate(value, issues);
    for (const issue of issues.list) result.errors.push({ line, ...issue });
    if (row !== undefined && issues.list.length === 0) {
      result.rows.push(row);
      result.lines.push(line);
    }
  });
  if (result.rows.length === 0 && result.errors.length === 0) {
    result.errors.push({ line: 1, path: '', message: 'the file has no rows' });
  }
  return result;
}

/** Read and validate a dataset file; throws DatasetError listing every bad row. */
export async function loadJsonl<K extends DatasetKind>(
  kind: K,
  file: string,
): Promise<DatasetRows[K][]> {
  const result = validateJsonl(kind, await readFile(file, 'utf8'));
  if (result.errors.length > 0) throw new DatasetError(file, result.errors);
  return result.rows;
}
