// The plain-HTTP/1.1 client (http1.ts) against real sockets: Node's HTTP server (what the fakes
// and the embedded servers are), and a raw TCP server that writes a reply's bytes in the pieces
// and with the framing a test chooses — content-length, chunked, close-delimited, 1xx first —
// split at every awkward place, or cut short.
import { once } from 'node:events';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { BytePool } from './byte-pool.ts';
import { Http1Agent, Http1Error, MAX_HEAD_BYTES } from './http1.ts';

const closers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (closers.length > 0) await closers.pop()?.();
});

async function listen(server: net.Server | HttpServer): Promise<URL> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  closers.push(() => {
    (server as HttpServer).closeAllConnections?.();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
}

/** A TCP server: for each request head it reads, `reply` writes bytes (pieces, with pauses). */
async function rawServer(
  reply: (socket: net.Socket, request: string, index: number) => Promise<void> | void,
): Promise<{ url: URL; connections: () => number }> {
  let connections = 0;
  let requests = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let seen = '';
    socket.on('data', (data) => {
      seen += data.toString('latin1');
      for (;;) {
        const end = seen.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = seen.slice(0, end);
        const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (seen.length < end + 4 + length) return;
        const request = seen.slice(0, end + 4 + length);
        seen = seen.slice(end + 4 + length);
        void reply(socket, request, requests++);
      }
    });
  });
  const url = await listen(server);
  closers.push(() => {
    for (const socket of sockets) socket.destroy();
  });
  return { url, connections: () => connections };
}

async function writePieces(socket: net.Socket, pieces: Array<string | Buffer>): Promise<void> {
  for (const piece of pieces) {
    socket.write(piece);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function agentWith(pool = new BytePool(1 << 24), idleMs?: number): Http1Agent {
  const agent = new Http1Agent(pool, idleMs);
  closers.push(() => agent.close());
  return agent;
}

function post(
  url: URL,
  body: string | Uint8Array | null = '{}',
  signal = new AbortController().signal,
) {
  return {
    url: new URL('/v1/completions?x=1', url),
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body,
    signal,
  };
}

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString('utf8');

describe('Http1Agent against Node’s HTTP server', () => {
  it('sends the request as written and reads replies of announced length into the pool, reusing the connection', async () => {
    const seen: Array<{
      method: string;
      url: string;
      headers: Record<string, unknown>;
      body: string;
    }> = [];
    const sockets = new Set<unknown>();
    const server = createHttpServer((req, res) => {
      sockets.add(req.socket);
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
        const reply = Buffer.alloc(200_000 + seen.length, 0x61 + seen.length);
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': reply.length });
        res.end(reply);
      });
    });
    const url = await listen(server);
    const pool = new BytePool(1 << 24);
    const agent = agentWith(pool);
    const payload = `{"prompt":"é${'x'.repeat(70_000)}"}`;
    const first = await agent.exchange(post(url, payload));
    expect(first.status).toBe(200);
    expect(first.bytes.length).toBe(200_001);
    expect(first.bytes.every((byte) => byte === 0x62)).toBe(true);
    expect(first.pooled).toBeDefined();
    expect(first.bytes.buffer).toBe(first.pooled?.buffer);
    pool.give(first.pooled as Buffer);
    const second = await agent.exchange(post(url, Buffer.from('[1,2]')));
    expect(second.bytes.length).toBe(200_002);
    expect(second.bytes.every((byte) => byte === 0x63)).toBe(true);
    expect(second.pooled).toBe(first.pooled); // the given-back buffer, read into again
    expect(sockets.size).toBe(1);
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/v1/completions?x=1', body: payload });
    expect(seen[0]?.headers).toMatchObject({
      host: url.host,
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(payload)),
    });
    expect(seen[1]?.body).toBe('[1,2]');
  });

  it('sends a bodiless GET and DELETE without content-length, and reads a 204', async () => {
    const heads: Array<Record<string, unknown>> = [];
    const server = createHttpServer((req, res) => {
      heads.push(req.headers);
      if (req.method === 'DELETE') {
        res.writeHead(204).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'); // chunked
    });
    const url = await listen(server);
    const agent = agentWith();
    const signal = new AbortController().signal;
    const got = await agent.exchange({
      url: new URL('/health', url),
      method: 'GET',
      headers: {},
      body: null,
      signal,
    });
    expect([got.status, text(got.bytes), got.pooled]).toEqual([200, '{"ok":true}', undefined]);
    const deleted = await agent.exchange({
      url: new URL('/x', url),
      method: 'DELETE',
      headers: {},
      body: null,
      signal,
    });
    expect([deleted.status, deleted.bytes.length]).toEqual([204, 0]);
    expect(heads.map((head) => head['content-length'])).toEqual([undefined, undefined]);
  });

  it('opens a new connection when the server closed the idle one, and never reuses past the server’s keep-alive timeout', async () => {
    let connections = 0;
    const server = createHttpServer((_req, res) =>
      res.writeHead(200, { 'content-length': 2 }).end('{}'),
    );
    server.on('connection', () => (connections += 1));
    server.keepAliveTimeout = 2_500; // Node announces `keep-alive: timeout=2`: the client reuses for 1 s
    const url = await listen(server);
    const agent = agentWith();
    await agent.exchange(post(url));
    await agent.exchange(post(url));
    expect(connections).toBe(1);
    server.closeIdleConnections();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const after = await agent.exchange(post(url));
    expect(after.status).toBe(200);
    expect(connections).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, 1_200)); // past timeout=2 minus the margin
    await agent.exchange(post(url));
    expect(connections).toBe(3);
  });
});

describe('Http1Agent against replies written byte by byte', () => {
  it('reads a content-length body split at every point of its head and body', async () => {
    const body = '{"choices":[{"index":0,"token_ids":[1,2,3]}]}';
    const reply = `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    const { url, connections } = await rawServer(async (socket, _request, index) => {
      const cut = (index * 7) % reply.length;
      await writePieces(
        socket,
        [reply.slice(0, cut), reply.slice(cut)].filter((p) => p.length > 0),
      );
    });
    const agent = agentWith();
    for (let cut = 0; cut < reply.length; cut += 7) {
      // request i is cut at 7i
      const got = await agent.exchange(post(url));
      expect(text(got.bytes)).toBe(body);
    }
    expect(connections()).toBe(1);
  });

  it('decodes chunked replies with extensions and trailers, chunks split across reads', async () => {
    const wire = [
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n',
      '5;name=value\r\n{"a":',
      '\r\n',
      'B\r\n[1,2,3,4,5',
      ']\r\n0\r',
      '\n',
      'X-Trailer: 1\r\n\r\n',
    ];
    const { url, connections } = await rawServer((socket) => writePieces(socket, wire));
    const agent = agentWith();
    const first = await agent.exchange(post(url));
    expect(text(first.bytes)).toBe('{"a":[1,2,3,4,5]');
    expect(first.pooled).toBeUndefined();
    const second = await agent.exchange(post(url)); // the same connection, read cleanly again
    expect(text(second.bytes)).toBe('{"a":[1,2,3,4,5]');
    expect(connections()).toBe(1);
  });

  it('skips 1xx interim replies and reads a close-delimited body to the end', async () => {
    const { url, connections } = await rawServer(async (socket) => {
      await writePieces(socket, [
        'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n',
        'HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\r\n{"err',
        'or":"busy"}',
      ]);
      socket.end();
    });
    const agent = agentWith();
    const got = await agent.exchange(post(url));
    expect([got.status, text(got.bytes)]).toEqual([503, '{"error":"busy"}']);
    await agent.exchange(post(url)); // a close-delimited reply's connection is not reused
    expect(connections()).toBe(2);
  });

  it('closes the connection after `connection: close` and HTTP/1.0 replies', async () => {
    const replies = [
      'HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}',
      'HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n[]',
      'HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnull',
    ];
    const { url, connections } = await rawServer((socket, _r, index) => {
      socket.write(replies[index] as string);
    });
    const agent = agentWith();
    const bodies: string[] = [];
    for (let i = 0; i < 3; i += 1) bodies.push(text((await agent.exchange(post(url))).bytes));
    expect(bodies).toEqual(['{}', '[]', 'null']);
    expect(connections()).toBe(3);
  });

  it('fails with a premature-close error when the server stops mid-body, and gives the buffer back', async () => {
    const { url } = await rawServer(async (socket) => {
      await writePieces(socket, [
        'HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n',
        'x'.repeat(70_000),
      ]);
      socket.destroy();
    });
    const pool = new BytePool(1 << 24);
    const agent = agentWith(pool);
    const failure = await agent.exchange(post(url)).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(Http1Error);
    expect(failure).toMatchObject({ code: 'HTTP_PREMATURE_CLOSE' });
    expect(pool.stats()).toMatchObject({ allocated: 1, pooledBytes: 131_072 });
  });

  it('refuses malformed replies with a protocol error', async () => {
    const replies = [
      'SPDY/3 200 OK\r\n\r\n',
      'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}',
      'HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
      'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}extra',
      `HTTP/1.1 200 OK\r\nX-Big: ${'a'.repeat(MAX_HEAD_BYTES)}\r\n\r\n`,
    ];
    const { url } = await rawServer((socket, _r, index) => {
      socket.write(replies[index] as string);
    });
    const agent = agentWith();
    for (const reply of replies) {
      const failure = await agent.exchange(post(url)).catch((error: unknown) => error);
      expect(failure, reply.slice(0, 60)).toMatchObject({ code: 'HTTP_PROTOCOL' });
    }
  });

  it('rejects with the signal’s reason when aborted mid-reply, and with ECONNREFUSED when nothing listens', async () => {
    const { url } = await rawServer((socket) => {
      socket.write('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{"a"'); // never finished
    });
    const agent = agentWith();
    const controller = new AbortController();
    const pending = agent.exchange(post(url, '{}', controller.signal));
    await new Promise((resolve) => setTimeout(resolve, 30));
    const reason = new Error('caller gave up');
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    expect(() => agent.exchange(post(url, '{}', controller.signal))).toThrow(reason);

    const closed = net.createServer();
    const port = (await listen(closed)).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const refused = await agent
      .exchange(post(new URL(`http://127.0.0.1:${port}/`)))
      .catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'ECONNREFUSED' });
  });
});
