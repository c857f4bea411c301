// followEvents against a local SSE server: stops at the wanted event without reconnecting,
// resumes after a dropped connection with Last-Event-ID, and treats 4xx as final.
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiClient, ApiError } from '../api/client.ts';
import { followEvents } from './stream.ts';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  server = undefined;
});

async function serve(
  handler: (req: IncomingMessage, res: ServerResponse, connection: number) => void,
): Promise<{ client: ApiClient; lastEventIds: (string | undefined)[] }> {
  const lastEventIds: (string | undefined)[] = [];
  server = createServer((req, res) => {
    lastEventIds.push(req.headers['last-event-id'] as string | undefined);
    handler(req, res, lastEventIds.length);
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { client: new ApiClient({ url: `http://127.0.0.1:${port}` }), lastEventIds };
}

const frame = (id: string, data: string) => `id: ${id}\nevent: x\ndata: ${data}\n\n`;
const stopAt = (last: string, seen: string[]) => (e: { data: string }) => {
  seen.push(e.data);
  return e.data === last ? ('stop' as const) : ('continue' as const);
};

describe('followEvents', () => {
  it('stops at the wanted event and does not reconnect, though the server keeps the stream open', async () => {
    const { client, lastEventIds } = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(frame('1-0', 'a') + frame('2-0', 'end'));
    });
    const seen: string[] = [];
    await followEvents({ client, path: '/e', onEvent: stopAt('end', seen), initialRetryMs: 10 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(seen).toEqual(['a', 'end']);
    expect(lastEventIds).toEqual([undefined]);
  });

  it('reconnects after a dropped connection with Last-Event-ID and misses nothing', async () => {
    const drops: string[] = [];
    const { client, lastEventIds } = await serve((_req, res, connection) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (connection === 1) {
        res.write(frame('1-0', 'a'));
        setTimeout(() => res.destroy(), 20); // the server dies mid-stream
      } else if (connection === 2) {
        res.end(); // a clean close before the end is a drop too
      } else {
        res.write(frame('2-0', 'b') + frame('3-0', 'end'));
      }
    });
    const seen: string[] = [];
    await followEvents({
      client,
      path: '/e',
      onEvent: stopAt('end', seen),
      onDrop: ({ reason }) => drops.push(reason),
      initialRetryMs: 10,
    });
    expect(seen).toEqual(['a', 'b', 'end']);
    expect(lastEventIds).toEqual([undefined, '1-0', '1-0']);
    expect(drops).toHaveLength(2);
    expect(drops[1]).toBe('the server closed the stream');
  });

  it('gives up on a 4xx problem at once, and retries a 503', async () => {
    const { client, lastEventIds } = await serve((_req, res, connection) => {
      const status = connection === 1 ? 503 : 404;
      res.writeHead(status, { 'content-type': 'application/problem+json' });
      res.end(JSON.stringify({ code: `E${status}`, title: 't', status, detail: 'gone' }));
    });
    const failure = followEvents({ client, path: '/e', onEvent: () => 'stop', initialRetryMs: 10 });
    await expect(failure).rejects.toBeInstanceOf(ApiError);
    await expect(failure).rejects.toMatchObject({ problem: { code: 'E404' } });
    expect(lastEventIds).toHaveLength(2);
  });

  it('an aborted signal ends the follow at once: the open stream closes, no reconnect', async () => {
    const { client, lastEventIds } = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(frame('1-0', 'a')); // and never ends
    });
    const controller = new AbortController();
    const seen: string[] = [];
    const following = followEvents({
      client,
      path: '/e',
      signal: controller.signal,
      initialRetryMs: 10,
      onEvent: (e) => {
        seen.push(e.data);
        controller.abort();
        return 'continue';
      },
    });
    await following;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(seen).toEqual(['a']);
    expect(lastEventIds).toEqual([undefined]);
    // Already aborted: returns without connecting.
    await followEvents({
      client,
      path: '/e',
      signal: controller.signal,
      onEvent: () => 'continue',
    });
    expect(lastEventIds).toHaveLength(1);
  });
});
