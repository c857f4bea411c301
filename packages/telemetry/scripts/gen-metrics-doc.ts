// Writes docs/metrics.md from the metric catalogue. Usage:
//   npm run gen:metrics-doc -w @anneal/telemetry          (rewrite the file)
//   npm run gen:metrics-doc -w @anneal/telemetry -- --check  (exit 1 when it is stale)
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderMetricsDoc } from '../src/doc.ts';

export const METRICS_DOC_PATH = fileURLToPath(new URL('../../../docs/metrics.md', import.meta.url));

function main(): number {
  const rendered = renderMetricsDoc();
  if (process.argv.includes('--check')) {
    let current = '';
    try {
      current = readFileSync(METRICS_DOC_PATH, 'utf8');
    } catch {
      // a missing file is stale
    }
    if (current === rendered) return 0;
    console.error(`${METRICS_DOC_PATH} is stale: run npm run gen:metrics-doc -w @anneal/telemetry`);
    return 1;
  }
  writeFileSync(METRICS_DOC_PATH, rendered);
  console.log(`wrote ${METRICS_DOC_PATH}`);
  return 0;
}

process.exitCode = main();
