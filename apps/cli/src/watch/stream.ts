// Follows a Server-Sent Events endpoint across dropped connections: on a network error, a 5xx,
// a stream that ends early or one that goes silent (no keep-alive within `idleTimeoutMs`), it
// reconnects with `Last-Event-ID` set to the last id received, so the server sends only later
// events (nothing lost, nothing repeated). 4xx answers are final and thrown.
import { ApiError, type ApiClient } from '../api/client.ts';
import { SseParser, type SseEvent } from './sse.ts';

export interface FollowOptions {
  client: ApiClient;
  /** e.g. `/v1/runs/run_…/events`. */
  path: string;
  /** Handles one event; return `'stop'` to end (e.g. the run reached a terminal state). */
  onEvent(event: SseEvent): 'continue' | 'stop';
  /** Told before each reconnect wait. */
  onDrop?(info: { reason: string; delayMs: number; attempt: number }): void;
  /** Told when a reconnect succeeded. */
  onReconnected?(info: { attempt: number; lastEventId: string | undefined }): void;
  /** No bytes (not even `: keep-alive`, sent every 15 s) for this long = a dead connection. */
  idleTimeoutMs?: number;
  /** Give up after failing to (re)connect for this long. */
  giveUpAfterMs?: number;
  /** First reconnect delay when the server sent no `retry:`. */
  initialRetryMs?: number;
  maxRetryMs?: number;
  /** Ends the follow (the promise resolves) at once: closes the stream, skips any reconnect. */
  signal?: AbortSignal;
}

/** Statuses worth retrying: the server or something in front of it is (briefly) unavailable. */
const RETRYABLE = (status: number) => status >= 500 || status === 429 || status === 408;

class StreamEnded extends Error {}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

function describe(error: unknown): string {
  if (error instanceof ApiError) return `${error.problem.code} (HTTP ${error.problem.status})`;
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message;
}

/** Resolves when `onEvent` returned `'stop'`; rejects on a 4xx or after `giveUpAfterMs`. */
export async function followEvents(options: FollowOptions): Promise<void> {
  const idleTimeoutMs = options.idleTimeoutMs ?? 45_000;
  const giveUpAfterMs = options.giveUpAfterMs ?? 300_000;
  const maxRetryMs = options.maxRetryMs ?? 10_000;
  let retryMs = options.initialRetryMs ?? 1000;
  let lastEventId: string | undefined;
  let failingSince: number | null = null;
  let attempt = 0;

  const outer = options.signal;
  for (;;) {
    if (outer?.aborted) return;
    const controller = new AbortController();
    const onOuterAbort = () => controller.abort(new Error('follow stopped'));
    outer?.addEventListener('abort', onOuterAbort, { once: true });
    let idle: NodeJS.Timeout | undefined;
    const armIdle = () => {
      clearTimeout(idle);
      idle = setTimeout(
        () => controller.abort(new Error(`no data for ${idleTimeoutMs / 1000} s`)),
        idleTimeoutMs,
      );
    };
    let reason: string;
    let stop = false;
    try {
      armIdle();
      const response = await options.client.stream(options.path, {
        signal: controller.signal,
        ...(lastEventId !== undefined && { headers: { 'last-event-id': lastEventId } }),
      });
      if (attempt > 0) options.onReconnected?.({ attempt, lastEventId });
      failingSince = null;
      attempt = 0;
      const parser = new SseParser();
      const decoder = new TextDecoder();
      if (!response.body) throw new StreamEnded('response without a body');
      for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
        armIdle();
        const events = parser.push(decoder.decode(chunk, { stream: true }));
        if (parser.retryMs !== undefined) retryMs = parser.retryMs;
        for (const event of events) {
          if (event.id !== undefined) lastEventId = event.id;
          if (options.onEvent(event) === 'stop') {
            stop = true;
            break;
          }
        }
        if (stop) break; // leaving the loop cancels the body stream
      }
      reason = 'the server closed the stream';
    } catch (error) {
      // Cancelling the body after the last wanted event may reject; the watch is over anyway.
      if (stop) return;
      if (error instanceof ApiError && !RETRYABLE(error.problem.status)) throw error;
      reason = controller.signal.aborted
        ? String((controller.signal.reason as Error | undefined)?.message ?? 'aborted')
        : describe(error);
    } finally {
      clearTimeout(idle);
      outer?.removeEventListener('abort', onOuterAbort);
      if (stop) controller.abort();
    }
    if (stop || outer?.aborted) return;
    failingSince ??= Date.now();
    if (Date.now() - failingSince > giveUpAfterMs) {
      throw new Error(
        `lost the event stream for ${Math.round(giveUpAfterMs / 1000)} s (last: ${reason})`,
      );
    }
    const delayMs = Math.min(maxRetryMs, Math.round(retryMs * 1.5 ** attempt));
    attempt += 1;
    options.onDrop?.({ reason, delayMs, attempt });
    await sleep(delayMs, outer);
  }
}
