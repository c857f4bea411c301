// A run page: its record and transitions (GET /v1/runs/{id}), step curves (curves.ts), the event
// stream as it happens (GET /v1/runs/{id}/events over fetch, sse.ts), its checkpoints and, for an
// eval run, the results table and chart (GET /v1/runs/{id}/results[/curve.svg]).
import { type RunEvent, type RunResource, type RunState, isTerminal } from '@anneal/protocol';
import { apiJson, apiPost, runPath } from '../api.ts';
import { catalogue } from '../catalogue.ts';
import { StepCurves } from '../curves.ts';
import { errorLine, fill, h } from '../dom.ts';
import { fleetShareText, num, span, when } from '../format.ts';
import { Checkpoints } from './checkpoints.ts';
import { renderEvalResults } from './eval.ts';
import { Usage } from './usage.ts';
import { labelChips, stateBadge } from './runs.ts';
import { runHref } from '../router.ts';
import { followEvents } from '../sse.ts';

/** Events kept on the page (newest first); older ones are in the API. */
const MAX_EVENTS = 300;

/** A GRPO run's rollout ledger, an eval run's answers. */
function browseLink(run: RunResource): HTMLElement | null {
  const page = run.kind === 'grpo' ? 'rollouts' : run.kind === 'eval' ? 'items' : null;
  if (!page) return null;
  const href = `#/runs/${encodeURIComponent(run.id)}/${page}`;
  const text = page === 'rollouts' ? 'Browse rollouts' : 'Browse answers';
  return h('p', {}, h('a', { href, class: 'button' }, text));
}

function summary(run: RunResource, controls: HTMLElement | null): HTMLElement {
  const facts: [string, Node | string][] = [
    ['id', run.id],
    ['kind', run.kind],
    ['pool', `${run.pool} (priority ${run.priority})`],
    ['step', String(run.lastStep ?? '–')],
    ['attempt', String(run.attempt)],
    ['created', when(run.createdAt)],
    ['started', when(run.startedAt)],
    [
      run.endedAt ? 'ran for' : 'running for',
      run.startedAt ? span(run.startedAt, run.endedAt) : '–',
    ],
    ['labels', labelChips(run.labels)],
  ];
  if (run.workerId) facts.push(['worker', run.workerId]);
  if (run.parent) {
    facts.push([
      'forked from',
      h(
        'span',
        {},
        h('a', { href: runHref(run.parent.run) }, run.parent.run),
        ` at step ${run.parent.step}`,
      ),
    ]);
  }
  if (run.waitingReason) facts.push(['waiting', run.waitingReason]);
  for (const demand of run.adapterDemand ?? []) {
    facts.push([
      `${demand.role} slots`,
      `${demand.slots} on ${demand.endpoint} (${demand.detail})`,
    ]);
  }
  for (const [endpoint, share] of Object.entries(run.fleetShare ?? {})) {
    facts.push([`share of ${endpoint}`, fleetShareText(share)]);
  }
  if (run.cancelRequested && !isTerminal(run.state)) facts.push(['cancel', 'requested']);
  if (run.pause) {
    const what = run.state === 'paused' ? 'paused' : 'pause requested';
    facts.push([what, `by ${run.pause.by}: ${run.pause.reason} (${when(run.pause.requestedAt)})`]);
  }
  if (run.guardrails && (run.guardrails.rollbacks > 0 || run.guardrails.learningRateScale !== 1)) {
    facts.push([
      'rollbacks',
      `${run.guardrails.rollbacks} (learning rate × ${num(run.guardrails.learningRateScale)})`,
    ]);
  }
  return h(
    'section',
    { class: 'summary' },
    h('h1', {}, run.name ?? run.id, ' ', stateBadge(run.state)),
    run.error ? h('p', { class: 'error' }, run.error) : null,
    h('dl', { class: 'facts' }, ...facts.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])),
    browseLink(run),
    controls,
  );
}

/** Pause, resume and cancel (submitter role: a viewer's token gets the API's 403, shown). */
function actions(run: RunResource, done: () => void): HTMLElement | null {
  if (isTerminal(run.state)) return null;
  const status = h('span', { class: 'status' });
  const button = (label: string, action: string, confirmText?: string) => {
    const b = h('button', { type: 'button', class: `action-${action}` }, label);
    b.addEventListener('click', async () => {
      if (confirmText && !window.confirm(confirmText)) return;
      b.disabled = true;
      try {
        await apiPost(`${runPath(run.id)}/${action}`, {});
        fill(status);
        done();
      } catch (error) {
        fill(status, errorLine(error));
      } finally {
        b.disabled = false;
      }
    });
    return b;
  };
  return h(
    'p',
    { class: 'actions' },
    run.state === 'paused'
      ? button('Resume', 'resume')
      : run.pause
        ? null
        : button('Pause', 'pause'),
    button('Cancel run', 'cancel', `Cancel ${run.name ?? run.id}?`),
    status,
  );
}

/** What the guardrails did (RunResource.guardrails): each firing, newest first. */
function guardrails(run: RunResource): HTMLElement | null {
  const firings = run.guardrails?.firings ?? [];
  if (firings.length === 0) return null;
  return h(
    'section',
    { class: 'guardrails' },
    h('h2', {}, 'Guardrail firings'),
    h(
      'table',
      {},
      h(
        'thead',
        {},
        h('tr', {}, ...['step', 'rule', 'action', 'what happened'].map((c) => h('th', {}, c))),
      ),
      h(
        'tbody',
        {},
        ...[...firings]
          .reverse()
          .map((f) =>
            h(
              'tr',
              {},
              h('td', { class: 'num' }, f.step),
              h('td', {}, f.rule.name),
              h('td', {}, h('span', { class: `action action-${f.action}` }, f.action)),
              h('td', {}, f.reason),
            ),
          ),
      ),
    ),
  );
}

function transitions(run: RunResource): HTMLElement {
  return h(
    'section',
    { class: 'transitions' },
    h('h2', {}, 'Transitions'),
    h(
      'table',
      {},
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          h('th', {}, 'at'),
          h('th', {}, 'from → to'),
          h('th', {}, 'by'),
          h('th', {}, 'reason'),
        ),
      ),
      h(
        'tbody',
        {},
        ...(run.transitions ?? []).map((t) =>
          h(
            'tr',
            {},
            h('td', {}, when(t.at)),
            h('td', {}, t.from ?? '∅', ' → ', stateBadge(t.to)),
            // Who asked (the token's principal, recorded by the control plane), apart from the
            // reason, which is the caller's own text.
            h('td', { class: 'principal' }, t.principal ?? t.by ?? ''),
            h('td', {}, t.reason),
          ),
        ),
      ),
    ),
  );
}

function describe(event: RunEvent): string {
  switch (event.type) {
    case 'run:state':
      return `${event.from ?? '∅'} → ${event.to}${event.principal ? ` by ${event.principal}` : ''}: ${event.reason}`;
    case 'step:committed': {
      const shown = Object.entries(event.metrics)
        .slice(0, 4)
        .map(([k, v]) => `${k} ${num(v)}`);
      return `step ${event.step} · ${shown.join(' · ')}`;
    }
    case 'checkpoint:saved':
      return `step ${event.step} → ${event.path}`;
    case 'run:notice':
      return `${event.code}: ${event.message}`;
    case 'guardrail:fired':
      return `${event.rule.name} → ${event.action} at step ${event.step}: ${event.reason}`;
    default:
      // Event types newer than this console: shown as they came.
      return JSON.stringify(event);
  }
}

export async function renderRun(main: HTMLElement, id: string, signal: AbortSignal): Promise<void> {
  const [run, cat] = await Promise.all([apiJson<RunResource>(runPath(id), signal), catalogue()]);
  const head = h('div', { class: 'head' });
  const trans = h('div', {}, guardrails(run), transitions(run));
  const curves = new StepCurves(id, run.kind, cat);
  const checkpoints = new Checkpoints(id, signal);
  checkpoints.refresh();
  const usage = new Usage(id, signal);
  usage.refresh();
  const eventList = h('ol', { class: 'events', reversed: true });
  const streamStatus = h('span', { class: 'sub' }, 'connecting…');
  const events = h(
    'section',
    { class: 'event-log' },
    h('h2', {}, 'Events ', streamStatus),
    eventList,
  );
  const results = run.kind === 'eval' ? h('section', { class: 'results' }) : null;
  fill(
    main,
    head,
    h(
      'div',
      { class: 'run-grid' },
      curves.element,
      h('div', { class: 'side' }, events, checkpoints.element, usage.element, trans),
    ),
    results,
  );
  if (results) void renderEvalResults(results, id, signal);

  const showHead = (current: RunResource) =>
    fill(
      head,
      summary(
        current,
        actions(current, () => void refresh().catch(() => {})),
      ),
    );
  showHead(run);
  let shown = run;
  let refreshing = false;
  let again = false;
  /** Reads the run again; a call while a read is in flight reads once more after it. */
  const refresh = async (): Promise<void> => {
    if (refreshing) {
      again = true;
      return;
    }
    refreshing = true;
    try {
      shown = await apiJson<RunResource>(runPath(id), signal);
      showHead(shown);
      fill(trans, guardrails(shown), transitions(shown));
      if (results && isTerminal(shown.state)) void renderEvalResults(results, id, signal);
    } finally {
      refreshing = false;
      if (again) {
        again = false;
        void refresh().catch(() => {});
      }
    }
  };
  /** Replayed events the record already reflects need no read (nor a redraw of the buttons). */
  const isNews = (at: string) => Date.parse(at) > Date.parse(shown.updatedAt);

  await curves.load(signal).catch((error: unknown) => {
    if (!signal.aborted) fill(curves.element, errorLine(error));
  });
  if (signal.aborted) return;
  void followEvents(`${runPath(id)}/events`, {
    signal,
    isLast: (m) =>
      m.event === 'run:state' && isTerminal((JSON.parse(m.data) as { to: RunState }).to),
    onTrouble: (error) =>
      fill(
        streamStatus,
        `reconnecting (${error instanceof Error ? error.message : String(error)})`,
      ),
    onMessage: (message) => {
      fill(streamStatus, 'live');
      const event = JSON.parse(message.data) as RunEvent;
      if (event.type === 'step:committed') {
        curves.add(event.step, event.metrics);
        usage.refresh();
      } else if (event.type === 'checkpoint:saved') checkpoints.refresh();
      else if (event.type === 'run:state' || event.type === 'guardrail:fired') {
        if (event.type === 'guardrail:fired' && event.rolledBackSteps) {
          curves.remove(event.rolledBackSteps);
        }
        if (isNews(event.at)) void refresh().catch(() => {});
        usage.refresh();
      }
      eventList.prepend(
        h(
          'li',
          { class: `event ev-${event.type.replace(':', '-')}`, 'data-type': event.type },
          h('time', {}, when(event.at)),
          ' ',
          h('span', { class: 'etype' }, event.type),
          ' ',
          describe(event),
        ),
      );
      while (eventList.children.length > MAX_EVENTS) eventList.lastElementChild?.remove();
    },
  })
    .then(() => {
      if (!signal.aborted) fill(streamStatus, 'run ended');
    })
    .catch((error: unknown) => fill(streamStatus, errorLine(error)));
}
