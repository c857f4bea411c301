// An eval run's answers (GET /v1/runs/{id}/items): one per checkpoint × budget × question,
// filtered like the rollouts (correct, abstained, tool calls, finish, text) and sortable; a
// question id opens that question in every cell, so checkpoints and budgets compare side by side.
import { apiJson, runPath, withQuery } from '../api.ts';
import { errorLine, fill, h } from '../dom.ts';
import { type Field, apiQuery, filterForm } from '../filters.ts';
import { num } from '../format.ts';
import { hrefWith } from '../router.ts';
import type { EvalItemPage } from '@anneal/protocol';

const yesNo = (name: string, label: string): Field => ({
  name,
  label,
  kind: 'select',
  options: [
    ['', 'any'],
    ['true', 'yes'],
    ['false', 'no'],
  ],
});

const FIELDS: readonly Field[] = [
  { name: 'checkpoint', label: 'checkpoint', kind: 'number', min: 0 },
  { name: 'budget', label: 'budget b', kind: 'number', min: 0 },
  yesNo('correct', 'correct'),
  yesNo('abstained', 'abstained'),
  yesNo('hasToolCalls', 'tool calls'),
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
  { name: 'grep', label: 'text', kind: 'text', placeholder: 'in the answer' },
  {
    name: 'sort',
    label: 'sort',
    kind: 'select',
    options: [
      ['', 'cell, question'],
      ['reward', 'reward-model score'],
      ['toolCalls', 'tool calls'],
      ['length', 'completion tokens'],
      ['promptTokens', 'prompt tokens'],
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

export async function renderItems(
  main: HTMLElement,
  id: string,
  query: URLSearchParams,
  signal: AbortSignal,
): Promise<void> {
  const base = `#/runs/${encodeURIComponent(id)}/items`;
  const prompt = query.get('prompt') ?? undefined;
  const body = h('div', {}, h('p', { class: 'sub' }, 'Loading…'));
  fill(
    main,
    h('h1', {}, 'Eval answers'),
    prompt
      ? h(
          'p',
          { class: 'notice compare' },
          `Question ${prompt} in every cell · `,
          h('a', { href: base }, 'all questions'),
        )
      : null,
    filterForm(base, FIELDS, query, prompt ? { prompt } : {}),
    body,
  );
  const cursor = query.get('cursor') ?? undefined;
  let page: EvalItemPage;
  try {
    page = await apiJson<EvalItemPage>(
      withQuery(`${runPath(id)}/items`, {
        ...apiQuery(FIELDS, query, ['prompt']),
        limit: 50,
        cursor,
      }),
      signal,
    );
  } catch (error) {
    fill(body, errorLine(error));
    return;
  }
  const current = Object.fromEntries([...query.entries()].filter(([k]) => k !== 'cursor'));
  fill(
    body,
    page.items.length === 0
      ? h('p', { class: 'empty' }, 'No answers match.')
      : h(
          'table',
          { class: 'items' },
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              ...[
                'checkpoint',
                'b',
                'question',
                'correct',
                'answer',
                'tool calls',
                'broken',
                'finish',
                'tokens in/out',
                'reward',
              ].map((c) => h('th', {}, c)),
            ),
          ),
          h(
            'tbody',
            {},
            ...page.items.map((item) =>
              h(
                'tr',
                { 'data-item': `${item.step}:${item.id}` },
                h('td', { class: 'num' }, item.checkpoint),
                h('td', { class: 'num' }, item.budget),
                h('td', {}, h('a', { href: hrefWith(base, { prompt: item.id }) }, item.id)),
                h(
                  'td',
                  { class: item.correct ? 'pass' : 'fail' },
                  item.correct ? '✓' : item.abstained ? 'abstained' : '✗',
                ),
                h('td', { class: 'answer' }, item.answer ?? '—'),
                h('td', { class: 'num' }, item.toolCalls),
                h('td', { class: 'num' }, item.brokenCalls),
                h('td', {}, item.finish),
                h('td', { class: 'num' }, `${item.promptTokens} / ${item.completionTokens}`),
                h('td', { class: 'num' }, num(item.reward)),
              ),
            ),
          ),
        ),
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
