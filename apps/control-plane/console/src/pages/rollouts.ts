// The rollout browser of a GRPO run (GET /v1/runs/{id}/rollouts, the rollout ledger): filter by
// step, role, reward, tool calls and errors, finish reason or text; sort by reward, advantage,
// IS ratio, length or tool calls; expand a rollout for its prompt, turns, tool calls, answer,
// reward parts, advantage and ratios; follow one prompt across steps (`?prompt=`), with a table
// of how its reward, tool calls and answers changed, and beside other runs (prompt-across-runs.ts).
import { apiJson, runPath, withQuery } from '../api.ts';
import { errorLine, fill, h } from '../dom.ts';
import { type Field, apiQuery, filterForm } from '../filters.ts';
import { num } from '../format.ts';
import { hrefWith } from '../router.ts';
import type { RolloutPage, RolloutRecord } from '@anneal/protocol';
import { meanRewardBySteps, promptAcrossRuns } from './prompt-across-runs.ts';
import { rolloutDetails } from './rollout-details.ts';

type Listed = RolloutPage['rollouts'][number];
const PAGE_SIZE = 50;

const FIELDS: readonly Field[] = [
  { name: 'step', label: 'step', kind: 'number', min: 1 },
  {
    name: 'role',
    label: 'role',
    kind: 'select',
    options: [
      ['', 'both'],
      ['policy', 'policy'],
      ['reference', 'reference'],
    ],
  },
  { name: 'minReward', label: 'R ≥', kind: 'number', step: 'any' },
  { name: 'maxReward', label: 'R ≤', kind: 'number', step: 'any' },
  {
    name: 'hasToolCalls',
    label: 'tool calls',
    kind: 'select',
    options: [
      ['', 'any'],
      ['true', 'some'],
      ['false', 'none'],
    ],
  },
  {
    name: 'hasToolErrors',
    label: 'tool errors',
    kind: 'select',
    options: [
      ['', 'any'],
      ['true', 'some'],
      ['false', 'none'],
    ],
  },
  {
    name: 'finish',
    label: 'finish',
    kind: 'select',
    options: [
      ['', 'any'],
      ['answer', 'answer'],
      ['no_answer', 'no answer'],
      ['length', 'length'],
      ['context_overflow', 'context overflow'],
    ],
  },
  { name: 'grep', label: 'text', kind: 'text', placeholder: 'in prompt, turns, answer' },
  {
    name: 'sort',
    label: 'sort',
    kind: 'select',
    options: [
      ['', 'step, group'],
      ['reward', 'reward R'],
      ['advantage', 'advantage'],
      ['ratio', 'IS ratio'],
      ['length', 'length'],
      ['toolCalls', 'tool calls'],
    ],
  },
  {
    name: 'order',
    label: 'order',
    kind: 'select',
    options: [
      ['', 'ascending'],
      ['desc', 'descending'],
    ],
  },
];

function summaryLine(r: Listed): HTMLElement {
  return h(
    'summary',
    {},
    h('span', { class: 'rid' }, r.id),
    h('span', { class: `role role-${r.role}` }, r.role),
    h('span', { class: 'metric' }, 'R ', h('b', {}, num(r.rewards?.reward))),
    h('span', { class: 'metric' }, 'Â ', h('b', {}, num(r.advantage))),
    h(
      'span',
      { class: 'metric' },
      'tools ',
      h('b', {}, `${r.toolCalls}`),
      r.toolErrors ? h('span', { class: 'error' }, ` (${r.toolErrors} failed)`) : null,
    ),
    h('span', { class: `finish finish-${r.finish}` }, r.finish),
    h('span', { class: 'metric' }, `${r.lengths.generated} tok`),
    h('span', { class: 'answer' }, r.answer ?? '—'),
  );
}

/** The same prompt step by step: what the rollouts of each step scored and answered. */
function acrossSteps(rollouts: readonly Listed[]): HTMLElement {
  const bySteps = new Map<number, Listed[]>();
  for (const r of rollouts)
    if (r.role === 'policy') bySteps.set(r.step, [...(bySteps.get(r.step) ?? []), r]);
  const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);
  const meanR = meanRewardBySteps(rollouts);
  return h(
    'table',
    { class: 'across' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ...['step', 'rollouts', 'mean R', 'mean tool calls', 'answers'].map((c) => h('th', {}, c)),
      ),
    ),
    h(
      'tbody',
      {},
      ...[...bySteps.entries()]
        .sort((a, b) => a[0] - b[0])
        .map(([step, rs]) =>
          h(
            'tr',
            { 'data-step': step },
            h('td', { class: 'num' }, step),
            h('td', { class: 'num' }, rs.length),
            h('td', { class: 'num' }, num(meanR.get(step))),
            h('td', { class: 'num' }, num(mean(rs.map((r) => r.toolCalls)))),
            h('td', {}, [...new Set(rs.map((r) => r.answer ?? '—'))].join(' · ')),
          ),
        ),
    ),
  );
}

export async function renderRollouts(
  main: HTMLElement,
  id: string,
  query: URLSearchParams,
  signal: AbortSignal,
): Promise<void> {
  const base = `#/runs/${encodeURIComponent(id)}/rollouts`;
  const prompt = query.get('prompt') ?? undefined;
  const keep: Record<string, string> = prompt ? { prompt } : {};
  const body = h('div', {}, h('p', { class: 'sub' }, 'Loading…'));
  fill(
    main,
    h('h1', {}, 'Rollouts'),
    prompt
      ? h(
          'p',
          { class: 'notice compare' },
          `Prompt ${prompt} across steps · `,
          h('a', { href: base }, 'all prompts'),
        )
      : null,
    prompt ? promptAcrossRuns(id, prompt, query, base, signal) : null,
    filterForm(base, FIELDS, query, keep),
    body,
  );
  let page: RolloutPage;
  const cursor = query.get('cursor') ?? undefined;
  try {
    page = await apiJson<RolloutPage>(
      withQuery(`${runPath(id)}/rollouts`, {
        ...apiQuery(FIELDS, query, ['prompt']),
        limit: prompt ? 200 : PAGE_SIZE,
        cursor,
      }),
      signal,
    );
  } catch (error) {
    fill(body, errorLine(error));
    return;
  }
  const current = Object.fromEntries([...query.entries()].filter(([k]) => k !== 'cursor'));
  const open = (r: Listed) => {
    const details = h('details', { class: 'rollout', 'data-rollout': r.id }, summaryLine(r));
    details.addEventListener('toggle', () => {
      if (details.open && details.childElementCount === 1) {
        details.append(rolloutDetails(r as RolloutRecord, id, base, signal));
      }
    });
    return details;
  };
  fill(
    body,
    prompt && page.rollouts.length > 0 ? acrossSteps(page.rollouts) : null,
    page.rollouts.length === 0
      ? h('p', { class: 'empty' }, 'No rollouts match.')
      : h('div', { class: 'rollouts' }, ...page.rollouts.map(open)),
    h(
      'nav',
      { class: 'pager' },
      cursor ? h('a', { href: hrefWith(base, current) }, '« First page') : null,
      page.nextCursor
        ? h(
            'a',
            { rel: 'next', href: hrefWith(base, { ...current, cursor: page.nextCursor }) },
            'Next page »',
          )
        : null,
    ),
  );
}
