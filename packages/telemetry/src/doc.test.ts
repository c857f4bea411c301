import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { METRICS } from './catalogue.ts';
import { renderMetricsDoc } from './doc.ts';
import { STEP_METRICS, type StepMetricTable } from './step-metrics.ts';

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
      m.name === 'anneal_http_requests_total' ? { ...m, help: 'Other.' } : m,
    );
    expect(renderMetricsDoc(STEP_METRICS, changed)).not.toBe(renderMetricsDoc());
  });

  it('shows a step row’s series with its record key, and a record-only row in the step record', () => {
    const table = {
      ...STEP_METRICS,
      entropy: {
        key: 'entropy',
        unit: 'none',
        kinds: ['grpo'],
        help: 'Mean token entropy.',
        series: { name: 'anneal_run_entropy', type: 'gauge', section: 'rollouts', title: 'E' },
      },
      kept: { key: 'kept_fraction', unit: 'ratio', kinds: ['sft'], help: 'Kept share.' },
    } satisfies StepMetricTable;
    const doc = renderMetricsDoc(table);
    expect(doc).toContain(
      '| `anneal_run_entropy` | gauge | none | `run_id` | `entropy` | Mean token entropy. |',
    );
    expect(doc).toContain(
      '| `entropy` | none | grpo | `anneal_run_entropy` | Mean token entropy. |',
    );
    expect(doc).toContain('| `kept_fraction` | ratio | sft |  | Kept share. |');
    expect(renderMetricsDoc()).not.toContain('anneal_run_entropy');
  });

  it('documents every record key of the table', () => {
    const doc = renderMetricsDoc();
    expect(doc).toContain('| `reward/{component}` | none | grpo | `anneal_run_reward` |');
    expect(doc).toContain('| `train_inference_kl/k1 (k1), train_inference_kl (k3)` |');
    expect(doc).toContain('| `tool_baseline/g{group}` |');
  });
});
