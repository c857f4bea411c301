import { describe, expect, it } from 'vitest';
import { SseParser } from './sse.ts';

describe('SseParser', () => {
  it('parses id/event/data frames, skips comments and keeps retry', () => {
    const parser = new SseParser();
    const events = parser.push(
      'retry: 2000\n\n: keep-alive\n\nid: 1-0\nevent: run:state\ndata: {"a":1}\n\n',
    );
    expect(events).toEqual([{ id: '1-0', event: 'run:state', data: '{"a":1}' }]);
    expect(parser.retryMs).toBe(2000);
  });

  it('joins frames split across chunks at any byte, with CRLF line ends split too', () => {
    const text =
      'id: 5-1\r\nevent: step:committed\r\ndata: {"step":1}\r\n\r\nid: 5-2\r\ndata: x\r\n\r\n';
    for (let cut = 1; cut < text.length; cut++) {
      const parser = new SseParser();
      const events = [...parser.push(text.slice(0, cut)), ...parser.push(text.slice(cut))];
      expect(events, `cut at ${cut}`).toEqual([
        { id: '5-1', event: 'step:committed', data: '{"step":1}' },
        { id: '5-2', event: 'message', data: 'x' },
      ]);
    }
  });

  it('joins multi-line data and drops frames without data', () => {
    const parser = new SseParser();
    expect(parser.push('event: x\n\ndata: a\ndata: b\n\n')).toEqual([
      { event: 'message', data: 'a\nb' },
    ]);
  });
});
