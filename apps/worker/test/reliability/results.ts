// Writes one measured row of docs/reliability.md's figures table to .anneal/reliability/
// (schema and renderer: scripts/reliability-report.mjs). One file per scenario and variant, so
// test files running in parallel never overwrite each other. Timing figures are recorded, never
// asserted against fixed numbers: the normal test run must not fail on a slow machine.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  type ReliabilityRow,
  RESULTS_DIR,
  checkRow,
} from '../../../../scripts/reliability-report.mjs';

export type { ReliabilityRow };

export async function recordResult(row: Omit<ReliabilityRow, 'measuredAt'>): Promise<void> {
  const full = checkRow({ ...row, measuredAt: new Date().toISOString() }, row.scenario);
  const name = `${full.scenario}--${full.variant}`.replace(/[^a-z0-9_.-]+/gi, '-');
  await mkdir(RESULTS_DIR, { recursive: true });
  await writeFile(path.join(RESULTS_DIR, `${name}.json`), `${JSON.stringify(full, null, 2)}\n`);
}
