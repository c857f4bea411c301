// Loads the document corpus of a `search: {type: local, corpus: FILE}` backend: JSONL, one
// `{id, title, text, url?}` per line; every bad line is reported with its number.
import { readFile } from 'node:fs/promises';
import type { CorpusDocument } from '@anneal/envs';
import { RunSetupError } from '../errors.ts';

function parseLine(raw: string, line: number, problems: string[]): CorpusDocument | null {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    problems.push(`line ${line}: invalid JSON (${(error as Error).message})`);
    return null;
  }
  const row = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  const missing = ['id', 'title', 'text'].filter((k) => typeof row[k] !== 'string');
  if (row.url !== undefined && typeof row.url !== 'string') missing.push('url');
  if (missing.length > 0) {
    problems.push(`line ${line}: ${missing.join(', ')} must be string(s)`);
    return null;
  }
  const { id, title, text, url } = row as unknown as CorpusDocument;
  return url === undefined ? { id, title, text } : { id, title, text, url };
}

export async function loadCorpus(file: string, endpoint: string): Promise<CorpusDocument[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new RunSetupError(`search endpoint '${endpoint}': cannot read corpus ${file}: ${error}`);
  }
  const problems: string[] = [];
  const documents: CorpusDocument[] = [];
  text.split(/\r?\n/).forEach((raw, index) => {
    if (raw.trim() === '') return;
    const doc = parseLine(raw, index + 1, problems);
    if (doc) documents.push(doc);
  });
  if (problems.length > 0 || documents.length === 0) {
    const shown = problems.length > 0 ? problems.slice(0, 10).join('; ') : 'no documents';
    throw new RunSetupError(`search endpoint '${endpoint}': corpus ${file}: ${shown}`);
  }
  return documents;
}
