#!/usr/bin/env node
// Renders docs/reliability.md's figures table from the results the reliability tests wrote
// under .anneal/reliability/ (one JSON row per scenario and variant; writer:
// apps/worker/test/reliability/results.ts). `npm run soak` runs the long variants and then this
// script; the normal `npm test` only checks that the committed table has these columns.
// Node built-ins only.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const RESULTS_DIR = path.join(root, '.anneal', 'reliability');
export const DOC = path.join(root, 'docs', 'reliability.md');
export const BEGIN = '<!-- reliability:figures:begin -->';
export const END = '<!-- reliability:figures:end -->';

/** The row schema: field, table header, and how a value is checked. */
export const COLUMNS = [
  { field: 'scenario', header: 'Scenario', type: 'string' },
  { field: 'variant', header: 'Variant', type: 'string' },
  { field: 'lost', header: 'Lost', type: 'count' },
  { field: 'duplicated', header: 'Duplicated', type: 'count' },
  { field: 'detectMs', header: 'Detect (ms)', type: 'ms' },
  { field: 'recoverMs', header: 'Recover (ms)', type: 'ms' },
  { field: 'detail', header: 'Detail', type: 'string' },
  { field: 'measuredAt', header: 'Measured', type: 'string' },
];

/** Throws naming the file and field when a result row does not fit COLUMNS. */
export function checkRow(row, source = 'row') {
  if (typeof row !== 'object' || row === null) throw new Error(`${source}: not an object`);
  for (const { field, type } of COLUMNS) {
    const value = row[field];
    const ok =
      type === 'string'
        ? typeof value === 'string' && value.length > 0
        : type === 'count'
          ? Number.isInteger(value) && value >= 0
          : value === null || (typeof value === 'number' && value >= 0);
    if (!ok)
      throw new Error(
        `${source}: field '${field}' must be a ${type}, got ${JSON.stringify(value)}`,
      );
  }
  return row;
}

const cell = (row, { field, type }) => {
  const value = row[field];
  if (type === 'ms') return value === null ? '–' : String(Math.round(value));
  if (field === 'measuredAt') return value.slice(0, 10);
  return String(value).replaceAll('|', '\\|');
};

/** The markdown table (header, separator, one line per row, sorted by scenario then variant). */
export function renderTable(rows) {
  const sorted = [...rows].sort(
    (a, b) => a.scenario.localeCompare(b.scenario) || a.variant.localeCompare(b.variant),
  );
  const line = (cells) => `| ${cells.join(' | ')} |`;
  return [
    line(COLUMNS.map((c) => c.header)),
    line(COLUMNS.map((c) => (c.type === 'string' ? '---' : '---:'))),
    ...sorted.map((row) => line(COLUMNS.map((c) => cell(row, c)))),
  ].join('\n');
}

/** The header cells of the first table between the markers of `doc` (the committed table). */
export function tableHeader(doc) {
  const start = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  if (start < 0 || end < start)
    throw new Error(`docs/reliability.md: markers ${BEGIN} / ${END} missing`);
  const first = doc
    .slice(start + BEGIN.length, end)
    .split('\n')
    .find((l) => l.startsWith('|'));
  if (!first) throw new Error('docs/reliability.md: no table between the markers');
  return first
    .split('|')
    .slice(1, -1)
    .map((c) => c.trim());
}

export async function readResults(dir = RESULTS_DIR) {
  const names = (await readdir(dir).catch(() => [])).filter((n) => n.endsWith('.json')).sort();
  const rows = [];
  for (const name of names) {
    const file = path.join(dir, name);
    rows.push(checkRow(JSON.parse(await readFile(file, 'utf8')), file));
  }
  return rows;
}

async function main() {
  const rows = await readResults();
  if (rows.length === 0) {
    console.error(`reliability-report: no results under ${RESULTS_DIR}; run the tests first`);
    process.exit(1);
  }
  const doc = await readFile(DOC, 'utf8');
  const start = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  if (start < 0 || end < start) throw new Error(`${DOC}: markers ${BEGIN} / ${END} missing`);
  const next = `${doc.slice(0, start + BEGIN.length)}\n\n${renderTable(rows)}\n\n${doc.slice(end)}`;
  await writeFile(DOC, next);
  // The repository's formatter aligns the table, so a regenerated doc passes `prettier --check`.
  const prettier = path.join(root, 'node_modules', '.bin', 'prettier');
  if (existsSync(prettier)) spawnSync(prettier, ['--write', DOC], { stdio: 'inherit' });
  console.error(`reliability-report: ${rows.length} rows -> ${path.relative(root, DOC)}`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await main();
}
