// Reading a dataset file before validating its rows: only a regular file (a FIFO in its place
// would block the read, and with it the control plane's start, forever), at most maxFileBytes;
// each line at most maxLineBytes and valid UTF-8 (Node's 'utf8' decoding would turn invalid bytes
// into U+FFFD silently). A bad line is reported with its number and left out; the others are
// validated as usual.
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { type RowError, type ValidationResult, validateJsonl } from './jsonl.ts';
import type { DatasetKind, DatasetRows } from './schemas.ts';

export interface DatasetFileLimits {
  maxFileBytes: number;
  maxLineBytes: number;
}

export const DEFAULT_DATASET_FILE_LIMITS: DatasetFileLimits = {
  maxFileBytes: 268_435_456,
  maxLineBytes: 1_048_576,
};

/** The file itself cannot be used (not a regular file, too large, unreadable). */
export class DatasetFileError extends Error {
  override readonly name = 'DatasetFileError';
}

export interface DatasetText {
  /** The file's text, every refused line left empty (line numbers are kept). */
  text: string;
  /** One per refused line. */
  errors: RowError[];
}

const NEWLINE = 0x0a;
const CR = 0x0d;

/** Splits `bytes` into lines, refusing those over `maxLineBytes` or not valid UTF-8. */
export function decodeDatasetLines(bytes: Uint8Array, maxLineBytes: number): DatasetText {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const lines: string[] = [];
  const errors: RowError[] = [];
  let start = 0;
  while (start <= bytes.length) {
    let end = bytes.indexOf(NEWLINE, start);
    if (end < 0) end = bytes.length;
    const line = lines.length + 1;
    const stop = end > start && bytes[end - 1] === CR ? end - 1 : end;
    const length = stop - start;
    if (length > maxLineBytes) {
      errors.push({
        line,
        path: '',
        message: `line is ${length} bytes, over the limit of ${maxLineBytes}`,
      });
      lines.push('');
    } else {
      try {
        lines.push(decoder.decode(bytes.subarray(start, stop)));
      } catch {
        errors.push({ line, path: '', message: 'not valid UTF-8' });
        lines.push('');
      }
    }
    start = end + 1;
  }
  return { text: lines.join('\n'), errors };
}

/** Reads a dataset file within `limits`; throws DatasetFileError when the file cannot be used. */
export async function readDatasetFile(
  path: string,
  limits: DatasetFileLimits = DEFAULT_DATASET_FILE_LIMITS,
): Promise<DatasetText> {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK).catch(
    (error: unknown) => {
      throw new DatasetFileError(`cannot read: ${(error as Error).message}`, { cause: error });
    },
  );
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) {
      const what = stat.isFIFO() ? 'a FIFO' : stat.isDirectory() ? 'a directory' : 'a special file';
      throw new DatasetFileError(`is ${what}, not a regular file`);
    }
    if (stat.size > limits.maxFileBytes) {
      throw new DatasetFileError(`is ${stat.size} bytes, over the limit of ${limits.maxFileBytes}`);
    }
    const bytes = await handle.readFile();
    if (bytes.length > limits.maxFileBytes) {
      throw new DatasetFileError(`grew past the limit of ${limits.maxFileBytes} bytes while read`);
    }
    return decodeDatasetLines(bytes, limits.maxLineBytes);
  } finally {
    await handle.close();
  }
}

/** Validates the rows of a read file; its refused lines come first in line order with the rest.
 * A file whose every line was refused has no rows: its lines say why. */
export function validateDatasetText<K extends DatasetKind>(
  kind: K,
  read: DatasetText,
): ValidationResult<DatasetRows[K]> {
  const result = validateJsonl(kind, read.text);
  const rowErrors = result.errors.filter(
    (e) => read.errors.length === 0 || e.message !== 'the file has no rows',
  );
  return { ...result, errors: [...read.errors, ...rowErrors].sort((a, b) => a.line - b.line) };
}
