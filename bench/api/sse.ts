// A minimal SSE reader for the API bench: counts the events (frames with an `id:`) a stream of
// GET /v1/runs/{id}/events has delivered, and waits for a count.
import http from 'node:http';

export interface EventStream {
  /** Events received so far. */
  readonly received: number;
  /** Resolves once `count` events have arrived (rejects if the stream ends first). */
  waitFor(count: number): Promise<void>;
  close(): void;
}

export function openEventStream(url: string, token: string): Promise<EventStream> {
  return new Promise((resolve, reject) => {
    let received = 0;
    let buffer = '';
    let ended = false;
    const waiters: Array<{ count: number; resolve: () => void; reject: (e: Error) => void }> = [];
    const settle = () => {
      for (const w of [...waiters]) {
        if (received >= w.count) w.resolve();
        else if (ended) w.reject(new Error(`${url}: stream ended after ${received} events`));
        else continue;
        waiters.splice(waiters.indexOf(w), 1);
      }
    };
    const request = http.get(
      url,
      { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } },
      (response) => {
        if (response.statusCode !== 200) {
          reject(new Error(`${url}: status ${response.statusCode}`));
          response.resume();
          return;
        }
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          buffer += chunk;
          let end = buffer.indexOf('\n\n');
          for (; end >= 0; end = buffer.indexOf('\n\n')) {
            if (/^id: /m.test(buffer.slice(0, end))) received += 1;
            buffer = buffer.slice(end + 2);
          }
          settle();
        });
        response.on('close', () => {
          ended = true;
          settle();
        });
        resolve({
          get received() {
            return received;
          },
          waitFor(count) {
            return new Promise((done, fail) => {
              waiters.push({ count, resolve: done, reject: fail });
              settle();
            });
          },
          close() {
            request.destroy();
          },
        });
      },
    );
    request.on('error', (error) => {
      if (!ended) reject(error);
    });
  });
}
