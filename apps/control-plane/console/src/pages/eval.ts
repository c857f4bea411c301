// An eval run's results: accuracy with its 95% interval, tool calls and cost per checkpoint and
// budget (GET /v1/runs/{id}/results), and the server's chart (curve.svg), fetched with the
// bearer header and shown through a blob: URL (an <img src> cannot send the header).
import type { EvalResults } from '@anneal/protocol';
import { apiGet, apiJson, runPath } from '../api.ts';
import { errorLine, fill, h } from '../dom.ts';
import { num } from '../format.ts';

let chartUrl: string | undefined;

export async function renderEvalResults(
  section: HTMLElement,
  id: string,
  signal: AbortSignal,
): Promise<void> {
  let results: EvalResults;
  let svg: Blob;
  try {
    [results, svg] = await Promise.all([
      apiJson<EvalResults>(`${runPath(id)}/results`, signal),
      apiGet(`${runPath(id)}/results/curve.svg`, signal).then((res) => res.blob()),
    ]);
  } catch (error) {
    if (!signal.aborted) fill(section, h('h2', {}, 'Eval results'), errorLine(error));
    return;
  }
  if (chartUrl) URL.revokeObjectURL(chartUrl);
  chartUrl = URL.createObjectURL(new Blob([svg], { type: 'image/svg+xml' }));
  const pct = (v: number | null) => (v === null ? '–' : `${(100 * v).toFixed(1)}%`);
  const table = h(
    'table',
    { class: 'eval' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ...[
          'checkpoint',
          'budget',
          'n',
          'accuracy (95%)',
          'tool calls',
          'broken calls',
          '$ / query',
        ].map((c) => h('th', {}, c)),
      ),
    ),
    h(
      'tbody',
      {},
      ...results.checkpoints.flatMap((cp) =>
        cp.cells.map((cell) =>
          h(
            'tr',
            { class: cell.budget === cp.knee ? 'knee' : '' },
            h('td', {}, cp.label),
            h(
              'td',
              { class: 'num' },
              cell.budget,
              cell.budget === cp.knee ? h('span', { class: 'chip' }, 'knee') : null,
            ),
            h('td', { class: 'num' }, cell.n),
            h(
              'td',
              { class: 'num' },
              `${pct(cell.accuracy)} [${pct(cell.accuracyLow)}, ${pct(cell.accuracyHigh)}]`,
            ),
            h('td', { class: 'num' }, num(cell.meanToolCalls)),
            h('td', { class: 'num' }, pct(cell.brokenToolCallRate)),
            h('td', { class: 'num' }, num(cell.costPerQueryUsd)),
          ),
        ),
      ),
    ),
  );
  fill(
    section,
    h('h2', {}, 'Eval results'),
    h('img', {
      src: chartUrl,
      alt: 'Eval accuracy vs tool budget, and accuracy vs cost',
      class: 'eval-chart',
    }),
    table,
  );
}
