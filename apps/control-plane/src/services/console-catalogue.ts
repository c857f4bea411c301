// What the console takes from the server's own tables, served as /console/catalogue.json
// (@anneal/protocol ConsoleCatalogue) so the browser bundle carries neither the tables nor the
// packages holding them: the run states and kinds (filters), and the step-curve panels, derived
// from the step metric table (@anneal/telemetry step-metrics.ts) the way the Grafana Run
// dashboard is: one panel per row, one line per record key, grouped by the dashboard's sections.
import {
  type ConsoleCatalogue,
  RUN_KINDS,
  RUN_STATES,
  type StepMetricPanel,
  keyPattern,
  recordBindings,
} from '@anneal/protocol';
import { STEP_METRICS, STEP_SECTIONS, type StepMetricDefinition } from '@anneal/telemetry';

export function consoleCatalogue(): ConsoleCatalogue {
  const panels: StepMetricPanel[] = [];
  for (const [id, row] of Object.entries(STEP_METRICS) as [string, StepMetricDefinition][]) {
    // Per-group rows (an open label) have no fixed keys to draw.
    const lines = recordBindings(row).map((b) => ({ key: b.key, legend: b.label?.value ?? '' }));
    if (lines.length === 0) continue;
    panels.push({
      id,
      title: row.series?.title ?? keyPattern(row),
      section: row.series?.section ?? 'more',
      featured: row.series !== undefined,
      unit: row.unit,
      kinds: [...row.kinds],
      help: row.help,
      lines,
    });
  }
  const sections = [
    ...Object.entries(STEP_SECTIONS).map(([sid, title]) => ({ id: sid, title })),
    { id: 'more', title: 'More step metrics' },
  ];
  return { states: [...RUN_STATES], kinds: [...RUN_KINDS], sections, panels };
}
