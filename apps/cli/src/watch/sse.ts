// A Server-Sent Events parser (the WHATWG event-stream format): feed it text chunks as they
// arrive, get complete events back. Handles CRLF/CR/LF line ends split across chunks, comments
// (`: keep-alive`), multi-line `data:`, `id:` and `retry:`.

export interface SseEvent {
  /** `event:` field; `message` when absent. */
  event: string;
  data: string;
  /** `id:` of this event, if it had one. */
  id?: string;
}

export class SseParser {
  private buffer = '';
  private pendingCr = false;
  private data: string[] = [];
  private event = '';
  private id: string | undefined;
  private hasField = false;
  /** The last `retry:` value in ms, if the server sent one. */
  retryMs: number | undefined;

  /** Parses a chunk; returns the events it completed, in order. */
  push(chunk: string): SseEvent[] {
    let text = chunk;
    if (this.pendingCr && text.startsWith('\n')) text = text.slice(1);
    this.pendingCr = false;
    this.buffer += text;
    const out: SseEvent[] = [];
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.buffer);
      if (!match) break;
      // A lone CR at the very end may be the first half of a CRLF split across chunks.
      if (match[0] === '\r' && match.index === this.buffer.length - 1) this.pendingCr = true;
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      const event = this.line(line);
      if (event) out.push(event);
    }
    return out;
  }

  private line(line: string): SseEvent | undefined {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'data':
        this.data.push(value);
        this.hasField = true;
        break;
      case 'event':
        this.event = value;
        this.hasField = true;
        break;
      case 'id':
        if (!value.includes('\0')) this.id = value;
        this.hasField = true;
        break;
      case 'retry':
        if (/^\d+$/.test(value)) this.retryMs = Number(value);
        break;
      default:
        break;
    }
    return undefined;
  }

  private dispatch(): SseEvent | undefined {
    const had = this.hasField && this.data.length > 0;
    const event: SseEvent = {
      event: this.event || 'message',
      data: this.data.join('\n'),
      ...(this.id !== undefined && { id: this.id }),
    };
    this.data = [];
    this.event = '';
    this.id = undefined;
    this.hasField = false;
    return had ? event : undefined;
  }
}
