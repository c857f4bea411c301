// An EventSource-like reader for the reliability tests: follows a run's events over real HTTP,
// reconnects with Last-Event-ID whenever its stream ends or fails (a restarted control plane, a
// Redis failover), until `finished` says so or the deadline passes.
export interface ReceivedEvent {
  id: string;
  type: string;
  step?: number;
  to?: string;
  code?: string;
}

export interface SseClient {
  /** Every event received, in order (a duplicate would appear twice). */
  events: ReceivedEvent[];
  ids(): string[];
  /** `step` of each `step:committed` received, in order. */
  steps(): number[];
  /** Times a stream ended and the client connected again. */
  reconnects: number;
  /** When the first event after a reconnect arrived. */
  resumedAt: number | null;
  done: Promise<void>;
}

export function sseClient(options: {
  url: string;
  token: string;
  finished(client: SseClient): boolean;
  stopAfterMs: number;
  retryMs?: number;
}): SseClient {
  const client: SseClient = {
    events: [],
    ids: () => client.events.map((e) => e.id),
    steps: () =>
      client.events.flatMap((e) =>
        e.type === 'step:committed' && e.step !== undefined ? [e.step] : [],
      ),
    reconnects: 0,
    resumedAt: null,
    done: Promise.resolve(),
  };
  const deadline = Date.now() + options.stopAfterMs;
  client.done = (async () => {
    let awaitingResume = false;
    while (Date.now() < deadline && !options.finished(client)) {
      const last = client.events.at(-1)?.id;
      try {
        const res = await fetch(options.url, {
          headers: {
            authorization: `Bearer ${options.token}`,
            ...(last !== undefined && { 'last-event-id': last }),
          },
          signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())),
        });
        if (res.status !== 200 || !res.body) throw new Error(`status ${res.status}`);
        const reader = res.body.getReader();
        const decoder = new TextDecoder();
        let buffer = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true });
          let boundary = buffer.indexOf('\n\n');
          while (boundary >= 0) {
            const frame = buffer.slice(0, boundary);
            buffer = buffer.slice(boundary + 2);
            boundary = buffer.indexOf('\n\n');
            const fields = Object.fromEntries(
              frame
                .split('\n')
                .filter((l) => !l.startsWith(':') && l.includes(':'))
                .map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trimStart()]),
            );
            if (fields.id === undefined || fields.data === undefined) continue;
            if (awaitingResume) {
              awaitingResume = false;
              client.resumedAt ??= Date.now();
            }
            const event = JSON.parse(fields.data) as Omit<ReceivedEvent, 'id'>;
            client.events.push({ ...event, id: fields.id });
          }
        }
      } catch {
        // refused while the control plane restarts or Redis fails over, or the deadline
      }
      if (options.finished(client)) return;
      client.reconnects++;
      awaitingResume = true;
      await new Promise((resolve) => setTimeout(resolve, options.retryMs ?? 100));
    }
  })();
  return client;
}
