// One prompt across runs: the rollout browser's "this prompt across steps" for several runs side
// by side (`#/runs/{id}/rollouts?prompt=P&with=B&with=C`). A prompt id is the same in every run
// that draws the same dataset example (the ledger's `promptId`), so each run's policy rollouts of
// it are read from that run's ledger (GET /v1/runs/{r}/rollouts?prompt=P&role=policy) and shown as
// one table: a row per step, each run's mean R there. A run of a sweep offers its sweep's runs.
import {
  SWEEP_LABEL,
  type RolloutPage,
  type RunResource,
  type SweepResource,
} from '@anneal/protocol';
import { apiJson, runPath, withQuery } from '../api.ts';
import { errorLine, fill, h } from '../dom.ts';
import { num } from '../format.ts';
import { hrefWith } from '../router.ts';

type Listed = RolloutPage['rollouts'][number];

/** Rollouts of one prompt a run shows at most (as the single-run view reads). */
const LIMIT = 200;

/** Mean R of each step's policy rollouts (steps without a scored rollout are left out). */
export function meanRewardBySteps(rollouts: readonly Listed[]): Map<number, number> {
  const sums = new Map<number, [number, number]>();
  for (const r of rollouts) {
    if (r.role !== 'policy' || !r.rewards) continue;
    const [sum, n] = sums.get(r.step) ?? [0, 0];
    sums.set(r.step, [sum + r.rewards.reward, n + 1]);
  }
  return new Map([...sums].map(([step, [sum, n]]) => [step, sum / n]));
}

/** The runs to show beside `id`, in the order asked, each once (`with` repeats or is comma-separated). */
export function withRuns(id: string, query: URLSearchParams): string[] {
  const ids = query
    .getAll('with')
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '' && v !== id);
  return [...new Set(ids)];
}

function table(runs: readonly string[], means: readonly Map<number, number>[]): HTMLElement {
  const steps = [...new Set(means.flatMap((m) => [...m.keys()]))].sort((a, b) => a - b);
  return h(
    'table',
    { class: 'across-runs' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', {}, 'step'),
        ...runs.map((run) => h('th', { 'data-run': run }, `mean R · ${run}`)),
      ),
    ),
    h(
      'tbody',
      {},
      ...steps.map((step) =>
        h(
          'tr',
          { 'data-step': step },
          h('td', { class: 'num' }, step),
          ...means.map((m) => h('td', { class: 'num' }, m.has(step) ? num(m.get(step)!) : '–')),
        ),
      ),
    ),
  );
}

/** The run's sweep's other runs, when it belongs to one; none when it does not or it is gone. */
async function sweepRuns(id: string, signal: AbortSignal): Promise<string[]> {
  const run = await apiJson<RunResource>(runPath(id), signal);
  const sweep = run.labels?.[SWEEP_LABEL];
  if (!sweep) return [];
  const resource = await apiJson<SweepResource>(
    `/v1/sweeps/${encodeURIComponent(sweep)}`,
    signal,
  ).catch(() => null);
  return resource ? resource.runs.map((r) => r.id).filter((r) => r !== id) : [];
}

/** The "across runs" part of the prompt view: a form to add runs, the sweep's runs as a link,
 * and — when runs are added — the table (filled in as the ledgers answer). */
export function promptAcrossRuns(
  id: string,
  prompt: string,
  query: URLSearchParams,
  base: string,
  signal: AbortSignal,
): HTMLElement {
  const others = withRuns(id, query);
  const input = h('input', {
    id: 'f-with',
    name: 'with',
    placeholder: 'run ids, comma-separated',
    value: others.join(','),
  });
  const form = h(
    'form',
    { class: 'across-runs', 'aria-label': 'Across runs' },
    h('label', { for: 'f-with' }, 'across runs'),
    input,
    h('button', { type: 'submit' }, 'Compare'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    location.hash = hrefWith(base, {
      prompt,
      with: withRuns(id, new URLSearchParams({ with: input.value })),
    });
  });
  const sweepLink = h('span', { class: 'sub' });
  const result = h('div', {});
  const section = h('section', { class: 'prompt-across-runs' }, form, sweepLink, result);
  void sweepRuns(id, signal)
    .then((runs) => {
      if (runs.length > 0) {
        fill(
          sweepLink,
          h(
            'a',
            { href: hrefWith(base, { prompt, with: runs }) },
            `Across its sweep’s ${runs.length + 1} runs`,
          ),
        );
      }
    })
    .catch(() => undefined);
  if (others.length > 0) {
    const runs = [id, ...others];
    fill(result, h('p', { class: 'sub' }, 'Loading…'));
    void Promise.all(
      runs.map((run) =>
        apiJson<RolloutPage>(
          withQuery(`${runPath(run)}/rollouts`, { prompt, role: 'policy', limit: LIMIT }),
          signal,
        ).then((page) => meanRewardBySteps(page.rollouts)),
      ),
    ).then(
      (means) => fill(result, table(runs, means)),
      (error: unknown) => fill(result, errorLine(error)),
    );
  }
  return section;
}
