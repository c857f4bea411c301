// Operator-registered JSONL datasets (operator config `datasets: {name: {kind, path}}`): read and
// validated row by row before any GPU time is spent. The control plane checks every file at
// start-up; workers load them into their data catalogue. Errors name the dataset, file and line.
import { DatasetError, formatRowError } from './jsonl.ts';
import {
  type DatasetFileLimits,
  type DatasetText,
  readDatasetFile,
  validateDatasetText,
} from './read-file.ts';
import type { DatasetKind, DatasetRows, RubricPromptRow } from './schemas.ts';

export interface RegisteredDatasetEntry {
  kind: DatasetKind;
  path: string;
}

export type RegisteredDataset = {
  [K in DatasetKind]: { name: string; kind: K; path: string; rows: DatasetRows[K][] };
}[DatasetKind];

/** A registered dataset that cannot be used: unreadable, or rows that fail validation. */
export class RegisteredDatasetError extends Error {
  override readonly name = 'RegisteredDatasetError';
}

const MAX_SHOWN = 10;

/** Reads and validates one registered dataset; throws RegisteredDatasetError naming every bad
 * line (first 10), e.g. `/datasets/my-qa (/data/qa.jsonl): line 3: answer: must be a non-empty string`. */
export async function loadRegisteredDataset(
  name: string,
  entry: RegisteredDatasetEntry,
  limits?: DatasetFileLimits,
): Promise<RegisteredDataset> {
  const where = `/datasets/${name} (${entry.path})`;
  let read: DatasetText;
  try {
    read = await readDatasetFile(entry.path, limits);
  } catch (error) {
    throw new RegisteredDatasetError(`${where}: ${(error as Error).message}`, { cause: error });
  }
  const result = validateDatasetText(entry.kind, read);
  const { errors } = result;
  if (errors.length > 0) {
    const shown = errors.slice(0, MAX_SHOWN).map((e) => `${where}: ${formatRowError(e)}`);
    const more = errors.length > MAX_SHOWN ? [`… and ${errors.length - MAX_SHOWN} more`] : [];
    throw new RegisteredDatasetError([...shown, ...more].join('\n'), {
      cause: new DatasetError(entry.path, errors),
    });
  }
  return { name, kind: entry.kind, path: entry.path, rows: result.rows } as RegisteredDataset;
}

/** Whether some rubric of these rows has no programmatic check (an LLM judge must grade it). */
export function needsJudge(rows: readonly RubricPromptRow[]): boolean {
  return rows.some((row) => row.rubrics.some((rubric) => rubric.check === undefined));
}

export interface RegisteredDatasetsCheck {
  /** One message per problem (every dataset is checked). */
  problems: string[];
  /** Rubric datasets with rubrics only a judge can grade. */
  needsJudge: string[];
}

/** Checks every registered dataset (control-plane start-up). */
export async function checkRegisteredDatasets(
  datasets: Readonly<Record<string, RegisteredDatasetEntry>>,
  limits?: DatasetFileLimits,
): Promise<RegisteredDatasetsCheck> {
  const check: RegisteredDatasetsCheck = { problems: [], needsJudge: [] };
  for (const [name, entry] of Object.entries(datasets)) {
    try {
      const dataset = await loadRegisteredDataset(name, entry, limits);
      if (dataset.kind === 'rubric' && needsJudge(dataset.rows)) check.needsJudge.push(name);
    } catch (error) {
      if (!(error instanceof RegisteredDatasetError)) throw error;
      check.problems.push(error.message);
    }
  }
  return check;
}
