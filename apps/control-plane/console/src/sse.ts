// Server-Sent Events over fetch: EventSource cannot send an Authorization header, so the stream
// is read from a fetch body and parsed here (the WHATWG "event stream interpretation": fields
// `id`, `event`, `data`, `retry`; a blank line dispatches; `:` lines are comments). A dropped
// stream is resumed with Last-Event-ID, as EventSource would.
import { ApiError, authHeaders, checkResponse } from './api.ts';

export interface SseMessage {
  id: string | undefined;
  event: string;
  data: string;
}

/** Incremental parser: push decoded text, get the complete messages it finished. */
export class SseParser {
  private buffer = '';
  private data: string[] = [];
  private event = '';
  private id: string | undefined;
  /** The `retry:` the server last asked for, in ms. */
  retryMs: number | undefined;

  push(text: string): SseMessage[] {
    this.buffer += text;
    const out: SseMessage[] = [];
    const lines = this.buffer.split('\n');
    // The last piece has no line end yet: kept for the next chunk. Lines end in LF or CRLF (a
    // lone CR, which the format also allows, is not something the control plane sends).
    this.buffer = lines.pop() ?? '';
    for (const line of lines) this.line(line.endsWith('\r') ? line.slice(0, -1) : line, out);
    return out;
  }

  private line(line: string, out: SseMessage[]): void {
    if (line === '') {
      if (this.data.length > 0) {
        out.push({ id: this.id, event: this.event || 'message', data: this.data.join('\n') });
      }
      this.data = [];
      this.event = '';
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
    else if (field === 'id' && !value.includes('\0')) this.id = value;
    else if (field === 'retry' && /^\d+$/.test(value)) this.retryMs = Number(value);
  }
}

export interface FollowOptions {
  signal: AbortSignal;
  onMessage(message: SseMessage): void;
  /** True for the message after which the server ends the stream for good. */
  isLast(message: SseMessage): boolean;
  /** A failure the stream does not recover from by itself (shown, then retried). */
  onTrouble?(error: unknown): void;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });

/** Follows `path` until the last message, an abort, or a 4xx (thrown: it will not get better). */
export async function followEvents(path: string, options: FollowOptions): Promise<void> {
  const { signal } = options;
  let lastId: string | undefined;
  let retryMs = 2000;
  while (!signal.aborted) {
    const parser = new SseParser();
    try {
      const res = await checkResponse(
        await fetch(path, {
          headers: authHeaders({
            accept: 'text/event-stream',
            ...(lastId !== undefined && { 'last-event-id': lastId }),
          }),
          cache: 'no-store',
          signal,
        }),
      );
      if (!res.body) throw new Error('the event stream has no body');
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        for (const message of parser.push(value)) {
          lastId = message.id ?? lastId;
          options.onMessage(message);
          if (options.isLast(message)) return;
        }
      }
    } catch (error) {
      if (signal.aborted) return;
      if (error instanceof ApiError && error.status < 500 && error.status !== 429) throw error;
      options.onTrouble?.(error);
    }
    retryMs = parser.retryMs ?? retryMs;
    await sleep(retryMs, signal);
  }
}
