// What the demo does through the REST API (docs/api.md): submit a run, follow its events over
// SSE until it ends, read its step history. Nothing here touches Redis or the worker directly.
import type { EvalItem, EvalItemPage, RunEvent, RunResource, StepRecord } from '@anneal/protocol';
import { isTerminal } from '@anneal/protocol/run-states';
import type { ApiClient } from '../api/client.ts';
import { followEvents } from '../watch/stream.ts';
import type { RunSpecJson } from './specs.ts';

/** A demo run that did not succeed; `reason` is the run's own failure message. */
export class DemoRunError extends Error {
  constructor(
    readonly run: RunResource,
    readonly reason: string,
  ) {
    super(`${run.kind} run ${run.id} ${run.state}: ${reason}`);
    this.name = 'DemoRunError';
  }
}

export async function submitRun(client: ApiClient, spec: RunSpecJson): Promise<RunResource> {
  const { body } = await client.request<RunResource>('POST', '/v1/runs', {
    body: JSON.stringify(spec),
  });
  return body;
}

export async function getRun(client: ApiClient, id: string): Promise<RunResource> {
  const { body } = await client.request<RunResource>('GET', `/v1/runs/${encodeURIComponent(id)}`);
  return body;
}

/** Every committed step of a run, ordered by step (GET /v1/runs/{id}/metrics, paged). */
/** The eval run's results chart (GET /v1/runs/{id}/results/curve.svg). */
export function readChart(client: ApiClient, id: string): Promise<string> {
  return client.getText(`/v1/runs/${encodeURIComponent(id)}/results/curve.svg`, 'image/svg+xml');
}

export async function readSteps(client: ApiClient, id: string): Promise<StepRecord[]> {
  const steps: StepRecord[] = [];
  let fromStep = 0;
  for (;;) {
    const { body } = await client.request<{ steps: StepRecord[] }>(
      'GET',
      `/v1/runs/${encodeURIComponent(id)}/metrics?fromStep=${fromStep}&limit=10000`,
    );
    steps.push(...body.steps);
    const last = body.steps.at(-1);
    if (body.steps.length < 10_000 || last === undefined) return steps;
    fromStep = last.step + 1;
  }
}

/** Every answer of an eval run (GET /v1/runs/{id}/items, all pages). */
export async function readItems(client: ApiClient, id: string): Promise<EvalItem[]> {
  const items: EvalItem[] = [];
  let cursor: string | null = null;
  do {
    const query: string = cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`;
    const { body } = await client.request<EvalItemPage>(
      'GET',
      `/v1/runs/${encodeURIComponent(id)}/items?limit=200${query}`,
    );
    items.push(...body.items);
    cursor = body.nextCursor;
  } while (cursor !== null);
  return items;
}

export async function cancelRun(client: ApiClient, id: string, reason: string): Promise<void> {
  await client.request('POST', `/v1/runs/${encodeURIComponent(id)}/cancel`, {
    body: JSON.stringify({ reason }),
  });
}

/**
 * Follows the run's event stream (GET /v1/runs/{id}/events) from its first event until its
 * terminal `run:state`, calling `onEvent` for each; resolves with the run as stored then.
 * A run that failed or was cancelled rejects with DemoRunError carrying its reason.
 */
export async function followRun(
  client: ApiClient,
  id: string,
  onEvent: (event: RunEvent) => void,
  signal?: AbortSignal,
): Promise<RunResource> {
  let terminal: { to: string; reason: string } | undefined;
  await followEvents({
    client,
    path: `/v1/runs/${encodeURIComponent(id)}/events`,
    ...(signal && { signal }),
    onEvent(raw) {
      const event = JSON.parse(raw.data) as RunEvent;
      onEvent(event);
      if (event.type === 'run:state' && isTerminal(event.to)) {
        terminal = { to: event.to, reason: event.reason };
        return 'stop';
      }
      return 'continue';
    },
  });
  if (signal?.aborted) throw signal.reason ?? new Error('aborted');
  const run = await getRun(client, id);
  if (run.state !== 'succeeded') {
    const reason = run.error ?? terminal?.reason ?? `stopped in state ${run.state}`;
    throw new DemoRunError(run, reason);
  }
  return run;
}
