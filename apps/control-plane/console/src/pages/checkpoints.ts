// A run's checkpoint catalogue (GET /v1/runs/{id}/checkpoints, paged): the kept checkpoints,
// newest first, the latest (resume point) marked, protections, the runs forked from each, and the
// step's key metrics, beside the catalogue's summary (deleted ones as a count and a step range).
// Read a page at a time: the newest page on load and again when the event stream reports a new
// checkpoint, older pages on request; never the whole catalogue.
import { apiGet, apiJson, runPath } from '../api.ts';
import { errorLine, fill, h } from '../dom.ts';
import { num, when } from '../format.ts';
import { runHref } from '../router.ts';
import type { CheckpointEntry, CheckpointList, CheckpointRetention } from '@anneal/protocol';

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

/** Entries a request asks for: the newest page on load and on each new checkpoint, then one
 * more page each time "older" is clicked. */
export const CHECKPOINT_PAGE = 50;

function summaryText(list: CheckpointList): string {
  const { kept, deleted } = list.summary;
  const gone =
    deleted.count === 0
      ? ''
      : ` · ${deleted.count} deleted by retention (steps ${deleted.firstStep}–${deleted.lastStep})`;
  return `${kept} kept${gone}`;
}

export class Checkpoints {
  readonly element = h('section', { class: 'checkpoints' }, h('h2', {}, 'Checkpoints'));
  private loading: Promise<void> | undefined;
  private again = false;
  /** Kept checkpoints shown, by step. */
  private readonly rows = new Map<number, CheckpointEntry>();
  private last: CheckpointList | undefined;
  /** Where the next older page starts (null: none older; undefined: not loaded yet). */
  private older: string | null | undefined;

  constructor(
    private readonly runId: string,
    private readonly signal: AbortSignal,
  ) {}

  /** Reloads the newest page; a call while one is in flight loads once more after it. */
  refresh(): void {
    this.queue(() => this.loadNewest());
  }

  private queue(load: () => Promise<void>): void {
    if (this.loading) {
      this.again = true;
      return;
    }
    this.loading = load().finally(() => {
      this.loading = undefined;
      if (this.again) {
        this.again = false;
        this.refresh();
      }
    });
  }

  private async fetchPage(cursor?: string): Promise<CheckpointList | undefined> {
    const query = new URLSearchParams({
      status: 'kept',
      order: 'desc',
      limit: String(CHECKPOINT_PAGE),
      ...(cursor !== undefined && { cursor }),
    });
    try {
      return await apiJson<CheckpointList>(
        `${runPath(this.runId)}/checkpoints?${query}`,
        this.signal,
      );
    } catch (error) {
      if (!this.signal.aborted) fill(this.element, h('h2', {}, 'Checkpoints'), errorLine(error));
      return undefined;
    }
  }

  /** The newest page replaces the rows it covers (from its oldest step up); older pages already
   * shown stay. */
  private async loadNewest(): Promise<void> {
    const list = await this.fetchPage();
    if (!list) return;
    const oldest = list.nextCursor === null ? -1 : (list.checkpoints.at(-1)?.step ?? -1);
    for (const step of this.rows.keys()) if (step >= oldest) this.rows.delete(step);
    for (const c of list.checkpoints) this.rows.set(c.step, c);
    if (this.older === undefined || list.nextCursor === null) this.older = list.nextCursor;
    this.last = list;
    this.render();
  }

  private async loadOlder(): Promise<void> {
    if (typeof this.older !== 'string') return;
    const list = await this.fetchPage(this.older);
    if (!list) return;
    for (const c of list.checkpoints) this.rows.set(c.step, c);
    this.older = list.nextCursor;
    this.last = list;
    this.render();
  }

  private render(): void {
    const list = this.last;
    if (!list) return;
    const rows = [...this.rows.values()].sort((a, b) => b.step - a.step);
    const more =
      typeof this.older === 'string'
        ? h('button', { type: 'button', class: 'link older' }, 'older checkpoints')
        : null;
    more?.addEventListener('click', () => this.queue(() => this.loadOlder()));
    fill(
      this.element,
      h('h2', {}, 'Checkpoints ', h('span', { class: 'sub' }, retentionText(list.retention))),
      h('p', { class: 'sub catalogue-summary' }, summaryText(list)),
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
      more,
    );
  }
}
