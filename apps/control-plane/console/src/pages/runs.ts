// The runs list: GET /v1/runs one page at a time (newest first, the API's cursor paging), with
// the API's own filters (state, kind, labels). Opening the page costs one request for one page,
// however many runs the tenant has (bench/console measures it with 10,000). Runs ticked on the
// page open side by side (#/compare); a run's `sweep` label links to its sweep.
import type { RunList, RunResource } from '@anneal/protocol';
import { apiJson, withQuery } from '../api.ts';
import { catalogue } from '../catalogue.ts';
import { errorLine, fill, h } from '../dom.ts';
import { ago, when } from '../format.ts';
import { compareHref, hrefWith, runHref, sweepHref } from '../router.ts';

export const PAGE_SIZE = 50;

export function stateBadge(state: string): HTMLElement {
  return h('span', { class: `state state-${state}` }, state);
}

export function labelChips(labels: Record<string, string>): HTMLElement {
  return h(
    'span',
    { class: 'labels' },
    ...Object.entries(labels).map(([k, v]) =>
      k === 'sweep' && /^sweep_[0-9A-Z]{26}$/.test(v)
        ? h('a', { class: 'chip', href: sweepHref(v) }, `${k}=${v}`)
        : h('span', { class: 'chip' }, `${k}=${v}`),
    ),
  );
}

function row(run: RunResource): HTMLElement {
  return h(
    'tr',
    { 'data-run': run.id },
    h(
      'td',
      {},
      h('input', {
        type: 'checkbox',
        name: 'compare',
        value: run.id,
        'aria-label': `Compare ${run.name ?? run.id}`,
      }),
    ),
    h(
      'td',
      {},
      h('a', { href: runHref(run.id) }, run.name ?? run.id),
      run.name ? h('div', { class: 'sub' }, run.id) : null,
    ),
    h('td', {}, stateBadge(run.state)),
    h('td', {}, run.kind),
    h('td', {}, labelChips(run.labels)),
    h('td', { class: 'num' }, run.lastStep ?? '–'),
    h(
      'td',
      { title: when(run.startedAt ?? run.createdAt) },
      run.startedAt
        ? ago(run.startedAt)
        : h('span', { class: 'sub' }, `created ${ago(run.createdAt)}`),
    ),
  );
}

function select(
  name: string,
  values: readonly string[],
  current: string | null,
): HTMLSelectElement {
  return h(
    'select',
    { name, id: `filter-${name}` },
    h('option', { value: '' }, `any ${name}`),
    ...values.map((v) => h('option', { value: v, ...(v === current && { selected: true }) }, v)),
  );
}

/** The filters as the hash carries them (cursor is the page, not a filter). */
function filtersOf(query: URLSearchParams) {
  return {
    state: query.get('state') ?? '',
    kind: query.get('kind') ?? '',
    label: query.getAll('label'),
  };
}

export async function renderRuns(
  main: HTMLElement,
  query: URLSearchParams,
  signal: AbortSignal,
): Promise<void> {
  const filters = filtersOf(query);
  const cursor = query.get('cursor') ?? undefined;
  const { states, kinds } = await catalogue();
  const labelInput = h('input', {
    name: 'label',
    id: 'filter-label',
    placeholder: 'label key=value, …',
    value: filters.label.join(', '),
  });
  const form = h(
    'form',
    { class: 'filters', 'aria-label': 'Filter runs' },
    select('state', states, filters.state),
    select('kind', kinds, filters.kind),
    labelInput,
    h('button', { type: 'submit' }, 'Filter'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const labels = String(data.get('label') ?? '')
      .split(',')
      .map((l) => l.trim())
      .filter(Boolean);
    window.location.hash = hrefWith('#/runs', {
      state: String(data.get('state') ?? ''),
      kind: String(data.get('kind') ?? ''),
      label: labels,
    });
  });
  const body = h('div', { class: 'runs-body' }, h('p', { class: 'sub' }, 'Loading…'));
  fill(main, h('h1', {}, 'Runs'), form, body);

  let page: RunList;
  try {
    page = await apiJson<RunList>(
      withQuery('/v1/runs', { ...filters, limit: PAGE_SIZE, cursor }),
      signal,
    );
  } catch (error) {
    fill(body, errorLine(error));
    return;
  }
  const pager = h(
    'nav',
    { class: 'pager', 'aria-label': 'Pages' },
    cursor ? h('a', { href: hrefWith('#/runs', filters) }, '« Newest') : null,
    page.nextCursor
      ? h(
          'a',
          { href: hrefWith('#/runs', { ...filters, cursor: page.nextCursor }), rel: 'next' },
          'Older »',
        )
      : null,
  );
  const compare = h('button', { type: 'button', class: 'compare-selected' }, 'Compare selected');
  compare.addEventListener('click', () => {
    const picked = [...body.querySelectorAll<HTMLInputElement>('input[name=compare]:checked')];
    if (picked.length >= 2) window.location.hash = compareHref(picked.map((box) => box.value));
  });
  fill(
    body,
    page.runs.length === 0 ? null : h('p', { class: 'actions' }, compare),
    page.runs.length === 0
      ? h('p', { class: 'empty' }, 'No runs match.')
      : h(
          'table',
          { class: 'runs' },
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              ...['', 'run', 'state', 'kind', 'labels', 'step', 'started'].map((c) =>
                h('th', {}, c),
              ),
            ),
          ),
          h('tbody', {}, ...page.runs.map(row)),
        ),
    pager,
  );
}
