// What a run consumed and cost (GET /v1/runs/{id}/usage): tokens, tool calls, slot time, USD by
// item, and its budget. Read again as steps commit (at most every few seconds) and at the end.
import { apiJson, runPath } from '../api.ts';
import { errorLine, fill, h } from '../dom.ts';
import { num } from '../format.ts';
import type { RunUsage } from '@anneal/protocol';

const MIN_INTERVAL_MS = 5000;
const usd = (value: number) =>
  `$${value < 0.01 && value > 0 ? value.toExponential(2) : value.toFixed(2)}`;

export class Usage {
  readonly element = h('section', { class: 'usage' });
  private last = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly runId: string,
    private readonly signal: AbortSignal,
  ) {
    signal.addEventListener('abort', () => clearTimeout(this.timer), { once: true });
  }

  /** Loads now if the last load is old enough, else once when it is. */
  refresh(): void {
    if (this.timer) return;
    const wait = Math.max(0, this.last + MIN_INTERVAL_MS - Date.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.last = Date.now();
      void this.load();
    }, wait);
  }

  private async load(): Promise<void> {
    let usage: RunUsage;
    try {
      usage = await apiJson<RunUsage>(`${runPath(this.runId)}/usage`, this.signal);
    } catch (error) {
      if (!this.signal.aborted) fill(this.element, h('h2', {}, 'Usage'), errorLine(error));
      return;
    }
    const u = usage.usage;
    const c = usage.costUsd;
    const row = (what: string, amount: string, cost: number) =>
      h(
        'tr',
        {},
        h('td', {}, what),
        h('td', { class: 'num' }, amount),
        h('td', { class: 'num' }, usd(cost)),
      );
    fill(
      this.element,
      h('h2', {}, 'Usage ', h('span', { class: 'sub' }, `${usd(c.total)} so far`)),
      h(
        'table',
        {},
        h(
          'thead',
          {},
          h('tr', {}, h('th', {}, 'what'), h('th', {}, 'amount'), h('th', {}, 'cost')),
        ),
        h(
          'tbody',
          {},
          row('prompt tokens', num(u.promptTokens), c.promptTokens),
          row('completion tokens', num(u.completionTokens), c.completionTokens),
          row('trained tokens', num(u.trainedTokens), c.trainedTokens),
          row('tool calls', num(u.toolCalls), c.toolCalls),
          row('judge calls', num(u.judgeCalls), c.judgeCalls),
          row('scored tokens (reward model)', num(u.scoredTokens), c.scoredTokens),
          row('slot time', `${num(u.slotSeconds)} s`, c.slotSeconds),
        ),
      ),
      usage.budget
        ? h(
            'p',
            { class: usage.budget.reached ? 'error' : 'sub' },
            `Budget ${usd(usage.budget.maxUsd)}: ${usd(usage.budget.remainingUsd)} left`,
            usage.budget.reached ? ' — reached, the run is paused' : '',
          )
        : null,
    );
  }
}
