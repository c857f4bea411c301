// A run's checkpoint catalogue (GET /v1/runs/{id}/checkpoints): every checkpoint it saved, kept
// or deleted by retention, the latest (resume point) marked, protections, the runs forked from
// it, and the step's key metrics. Refetched when the event stream reports a new checkpoint.
import { apiGet, apiJson, runPath } from '../api.ts';
import { errorLine, fill, h } from '../dom.ts';
import { num, when } from '../format.ts';
import { runHref } from '../router.ts';
import type { CheckpointList, CheckpointRetention } from '../types.ts';

/** The step metrics worth a glance next to a checkpoint, by run kind, first found wins. */
const KEY_METRICS = ['reward/all', 'loss', 'heldout_pair_accuracy', 'pair_accuracy', 'grad_norm'];

function retentionText(r: CheckpointRetention): string {
  const rules = [
    r.keepLast !== undefined ? `the last ${r.keepLast}` : null,
    r.keepEvery !== undefined ? `every ${r.keepEvery} steps` : null,
    r.keepBest
      ? `the best ${r.keepBest.count} by ${r.keepBest.metric} (${r.keepBest.order})`
      : null,
  ].filter(Boolean);
  return rules.length === 0 ? 'keeps every checkpoint' : `keeps ${rules.join(', ')} and the latest`;
}

/** Downloads the export (GET …/checkpoints/{step}/export, a tar) fetched with the token: an
 * object URL clicked as a download link, since a plain link could not send the header. */
function exportButton(runId: string, step: number, signal: AbortSignal): HTMLElement {
  const status = h('span', { class: 'sub' });
  const button = h('button', { type: 'button', class: 'link' }, 'export');
  button.addEventListener('click', async () => {
    fill(status, ' …');
    try {
      const res = await apiGet(`${runPath(runId)}/checkpoints/${step}/export`, signal);
      const url = URL.createObjectURL(await res.blob());
      const link = h('a', { href: url, download: `${runId}-step-${step}.tar` });
      link.click();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
      fill(status);
    } catch (error) {
      fill(status, errorLine(error));
    }
  });
  return h('div', {}, button, status);
}

export class Checkpoints {
  readonly element = h('section', { class: 'checkpoints' }, h('h2', {}, 'Checkpoints'));
  private loading: Promise<void> | undefined;
  private again = false;

  constructor(
    private readonly runId: string,
    private readonly signal: AbortSignal,
  ) {}

  /** Loads the catalogue; a call while one is in flight loads once more after it. */
  refresh(): void {
    if (this.loading) {
      this.again = true;
      return;
    }
    this.loading = this.load().finally(() => {
      this.loading = undefined;
      if (this.again) {
        this.again = false;
        this.refresh();
      }
    });
  }

  private async load(): Promise<void> {
    let list: CheckpointList;
    try {
      list = await apiJson<CheckpointList>(`${runPath(this.runId)}/checkpoints`, this.signal);
    } catch (error) {
      if (!this.signal.aborted) fill(this.element, h('h2', {}, 'Checkpoints'), errorLine(error));
      return;
    }
    const rows = [...list.checkpoints].reverse();
    fill(
      this.element,
      h('h2', {}, 'Checkpoints ', h('span', { class: 'sub' }, retentionText(list.retention))),
      rows.length === 0
        ? h('p', { class: 'empty' }, 'None saved yet.')
        : h(
            'table',
            {},
            h(
              'thead',
              {},
              h('tr', {}, ...['step', 'saved', 'metrics', 'path'].map((c) => h('th', {}, c))),
            ),
            h(
              'tbody',
              {},
              ...rows.map((c) => {
                const metric = KEY_METRICS.find((k) => c.metrics?.[k] !== undefined);
                return h(
                  'tr',
                  { class: c.status === 'deleted' ? 'deleted' : '', 'data-step': c.step },
                  h(
                    'td',
                    { class: 'num' },
                    c.step,
                    c.latest ? h('span', { class: 'chip' }, 'latest') : null,
                    c.status === 'deleted'
                      ? h('span', { class: 'chip' }, 'deleted')
                      : exportButton(this.runId, c.step, this.signal),
                    ...c.protections.map((p) =>
                      h('span', { class: 'chip', title: p.reason }, `kept by ${p.owner}`),
                    ),
                  ),
                  h('td', {}, when(c.at)),
                  h('td', { class: 'num' }, metric ? `${metric} ${num(c.metrics?.[metric])}` : '–'),
                  h(
                    'td',
                    { class: 'path' },
                    c.path,
                    c.samplerPath ? h('div', { class: 'sub' }, `sampler: ${c.samplerPath}`) : null,
                    ...c.usedBy.map((run) =>
                      h('div', { class: 'sub' }, 'forked by ', h('a', { href: runHref(run) }, run)),
                    ),
                  ),
                );
              }),
            ),
          ),
    );
  }
}
