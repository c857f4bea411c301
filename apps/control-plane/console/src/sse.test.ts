// The console's event-stream parser against the WHATWG HTML "Interpreting an event stream"
// rules it follows: fields, comments, dispatch on a blank line, the id that carries over to the
// next message, retry, and lines split across chunks.
import { describe, expect, it } from 'vitest';
import { SseParser } from './sse.ts';

describe('SseParser', () => {
  it('dispatches a message on a blank line, default type "message", joining data lines', () => {
    const parser = new SseParser();
    expect(parser.push('data: one\ndata: two\n\n')).toEqual([
      { id: undefined, event: 'message', data: 'one\ntwo' },
    ]);
  });

  it('reads event and id; the id carries over, the event type does not', () => {
    const parser = new SseParser();
    expect(parser.push('id: 5-0\nevent: run:state\ndata: {}\n\ndata: x\n\n')).toEqual([
      { id: '5-0', event: 'run:state', data: '{}' },
      { id: '5-0', event: 'message', data: 'x' },
    ]);
  });

  it('keeps a line split across chunks until its end arrives, CRLF included', () => {
    const parser = new SseParser();
    expect(parser.push('data: par')).toEqual([]);
    expect(parser.push('tial\r\n')).toEqual([]);
    expect(parser.push('\r\n')).toEqual([{ id: undefined, event: 'message', data: 'partial' }]);
  });

  it('ignores comments, unknown fields and a block without data', () => {
    const parser = new SseParser();
    expect(parser.push(': keep-alive\n\nevent: ping\nfoo: bar\n\n')).toEqual([]);
    // The ignored block's event type does not leak into the next message.
    expect(parser.push('data: after\n\n')).toEqual([
      { id: undefined, event: 'message', data: 'after' },
    ]);
  });

  it('strips one space after the colon only; a field without a colon has an empty value', () => {
    const parser = new SseParser();
    expect(parser.push('data:  two spaces\ndata\ndata:none\n\n')).toEqual([
      { id: undefined, event: 'message', data: ' two spaces\n\nnone' },
    ]);
  });

  it('takes retry only as digits, and refuses an id containing NUL', () => {
    const parser = new SseParser();
    parser.push('retry: 1500\n');
    expect(parser.retryMs).toBe(1500);
    parser.push('retry: 2s\nretry: -1\n');
    expect(parser.retryMs).toBe(1500);
    expect(parser.push('id: 1-0\ndata: a\n\nid: bad\0id\ndata: b\n\n')).toEqual([
      { id: '1-0', event: 'message', data: 'a' },
      { id: '1-0', event: 'message', data: 'b' },
    ]);
  });
});
