import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { send } from './http.ts';

let base: URL;
const seen: { method?: string; headers?: IncomingMessage['headers']; body?: string }[] = [];
const server = createServer((request, response) => {
  let body = '';
  request.on('data', (chunk: Buffer) => (body += chunk.toString()));
  request.on('end', () => {
    seen.push({ method: request.method!, headers: request.headers, body });
    response.writeHead(request.url === '/missing' ? 404 : 201, 'Made It', {
      'content-type': 'application/json',
    });
    response.end(JSON.stringify({ echoed: body }));
  });
});

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('send', () => {
  it('sends method, headers and a UTF-8 body with its byte length, and returns the reply', async () => {
    const reply = await send(new URL('/v1/runs', base), {
      method: 'POST',
      headers: { authorization: 'Bearer t', 'content-type': 'application/json' },
      body: '{"name":"é"}',
    });
    expect(reply).toEqual({
      status: 201,
      statusText: 'Made It',
      text: '{"echoed":"{\\"name\\":\\"é\\"}"}',
    });
    expect(seen.at(-1)!.method).toBe('POST');
    expect(seen.at(-1)!.headers!['authorization']).toBe('Bearer t');
    expect(seen.at(-1)!.headers!['content-length']).toBe('13');
  });

  it('returns error statuses as replies, not rejections', async () => {
    const reply = await send(new URL('/missing', base), { method: 'GET', headers: {} });
    expect(reply.status).toBe(404);
  });

  it('rejects with the socket error code when nothing listens', async () => {
    await expect(
      send(new URL('http://127.0.0.1:9/'), { method: 'GET', headers: {} }),
    ).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('refuses protocols other than http and https', async () => {
    await expect(send(new URL('ftp://x/'), { method: 'GET', headers: {} })).rejects.toThrow(
      'unsupported protocol ftp:',
    );
  });
});
