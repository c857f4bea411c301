// Parses PromQL with promtool: each expression becomes a recording rule in its own group of a
// temporary rule file, and `promtool check rules` reports the ones that do not parse.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { promtool } from './promtool.ts';

export interface ParseCheckResult {
  ok: boolean;
  /** promtool's output, with group names that say where each expression came from. */
  output: string;
}

/** `expressions`: origin → expression with every template variable already expanded. */
export function checkExpressionsParse(expressions: ReadonlyMap<string, string>): ParseCheckResult {
  const groups = [...expressions].map(([origin, expr], i) => ({
    name: `${i}: ${origin}`,
    rules: [{ record: `anneal_parse_check_${i}`, expr }],
  }));
  const dir = mkdtempSync(path.join(tmpdir(), 'anneal-promql-'));
  try {
    const file = path.join(dir, 'expressions.yml');
    writeFileSync(file, stringify({ groups }));
    return promtool(['check', 'rules', file]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
