// A sweep (#/sweeps/{id}, GET /v1/sweeps/{id}): its grid, runs in each state, the best run by
// its metric, pause/resume/cancel of all its runs, and its runs compared (./compare.ts).
import type { SweepResource } from '@anneal/protocol';
import { apiJson, apiPost } from '../api.ts';
import { errorLine, fill, h } from '../dom.ts';
import { num } from '../format.ts';
import { runHref } from '../router.ts';
import { renderComparison } from './compare.ts';

const sweepPath = (id: string) => `/v1/sweeps/${encodeURIComponent(id)}`;

function summary(sweep: SweepResource, reload: () => void): HTMLElement {
  const counts = Object.entries(sweep.counts)
    .filter(([, n]) => n > 0)
    .map(([state, n]) => `${n} ${state}`)
    .join(', ');
  const grid = Object.entries(sweep.grid).map(
    ([path, values]) => `${path} ∈ {${values.map((v) => JSON.stringify(v)).join(', ')}}`,
  );
  const facts: [string, Node | string][] = [
    ['runs', `${sweep.runs.length} ${sweep.kind}: ${counts || 'none yet'}`],
    ['grid', grid.join(' × ')],
    ['created', sweep.createdAt],
  ];
  if (sweep.budget) {
    facts.push(['budget', `$${sweep.budget.maxUsd} ($${num(sweep.budget.perRunUsd)} per run)`]);
  }
  if (sweep.select) {
    facts.push([
      `best ${sweep.select.metric} (${sweep.select.mode})`,
      sweep.best
        ? h(
            'span',
            { class: 'best' },
            h('a', { href: runHref(sweep.best.runId) }, sweep.best.runId),
            ` = ${num(sweep.best.value)}`,
          )
        : '–',
    ]);
  }
  const status = h('span', { class: 'status' });
  const button = (label: string, action: string) => {
    const b = h('button', { type: 'button', class: `action-${action}` }, label);
    b.addEventListener('click', async () => {
      b.disabled = true;
      try {
        await apiPost(`${sweepPath(sweep.id)}/${action}`, {});
        reload();
      } catch (error) {
        fill(status, errorLine(error));
        b.disabled = false;
      }
    });
    return b;
  };
  return h(
    'section',
    { class: 'summary' },
    h('h1', {}, sweep.name ?? sweep.id, ' ', h('span', { class: 'sub' }, sweep.id)),
    h('dl', { class: 'facts' }, ...facts.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])),
    sweep.done
      ? null
      : h(
          'p',
          { class: 'actions' },
          sweep.counts.paused > 0 ? button('Resume all', 'resume') : button('Pause all', 'pause'),
          button('Cancel all', 'cancel'),
          status,
        ),
  );
}

export async function renderSweep(
  main: HTMLElement,
  id: string,
  signal: AbortSignal,
): Promise<void> {
  const sweep = await apiJson<SweepResource>(sweepPath(id), signal);
  const body = h('div', { class: 'compare-body' });
  const reload = () => void renderSweep(main, id, signal);
  fill(main, summary(sweep, reload), h('h2', {}, 'Runs compared'), body);
  const runs = sweep.runs.map((r) => r.id);
  if (runs.length < 2) fill(body, h('p', { class: 'empty' }, 'A sweep of one run: see the run.'));
  else await renderComparison(body, runs, signal);
}
