import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { METRICS } from './catalogue.ts';
import { renderMetricsDoc } from './doc.ts';

const DOC = new URL('../../../docs/metrics.md', import.meta.url);

describe('docs/metrics.md', () => {
  it('is exactly the rendered catalogue (run npm run gen:metrics-doc -w @anneal/telemetry)', () => {
    expect(readFileSync(DOC, 'utf8')).toBe(renderMetricsDoc());
  });

  it('lists every metric once with its type', () => {
    const doc = renderMetricsDoc();
    for (const m of METRICS) {
      expect(doc.split(`| \`${m.name}\` | ${m.type} |`)).toHaveLength(2);
    }
  });

  it('changes when the catalogue changes', () => {
    const changed = METRICS.map((m) =>
      m.name === 'anneal_run_loss' ? { ...m, help: 'Other.' } : m,
    );
    expect(renderMetricsDoc(changed)).not.toBe(renderMetricsDoc());
  });
});
