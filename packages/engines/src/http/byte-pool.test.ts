// The byte pool on its own, and reply bodies read into it over real HTTP (sendJson): reused
// buffers never mix one reply's bytes into another, a released reply refuses to be read, and a
// body of unannounced length still reads whole.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BytePool, MIN_POOLED_BYTES, processBytePool } from './byte-pool.ts';
import { JsonBytesWriter } from './json-text.ts';
import { sendJson } from './request.ts';
import { realTimers } from './timing.ts';

describe('BytePool', () => {
  it('hands a given-back buffer of the same size class out again', () => {
    const pool = new BytePool(1 << 20);
    const first = pool.take(100_000);
    expect(first.length).toBe(131_072);
    pool.give(first);
    expect(pool.stats()).toEqual({ reused: 0, allocated: 1, pooledBytes: 131_072 });
    const second = pool.take(70_000);
    expect(second).toBe(first);
    expect(pool.take(70_000)).not.toBe(first); // lent out: a new one
    expect(pool.stats()).toEqual({ reused: 1, allocated: 2, pooledBytes: 0 });
  });

  it('keeps at most its byte limit and takes back only its own buffers, once', () => {
    const pool = new BytePool(1 << 17);
    const a = pool.take(1 << 17);
    const b = pool.take(1 << 17);
    pool.give(a);
    pool.give(a); // twice: ignored
    pool.give(b); // past the limit: left to the collector
    pool.give(Buffer.alloc(1 << 17)); // not the pool's
    expect(pool.stats().pooledBytes).toBe(1 << 17);
    expect(pool.take(1 << 17)).toBe(a);
    expect(pool.take(1 << 17)).not.toBe(b);
  });

  it('does not pool small sizes', () => {
    const pool = new BytePool(1 << 20);
    const small = pool.take(MIN_POOLED_BYTES - 1);
    expect(small.length).toBe(MIN_POOLED_BYTES - 1);
    pool.give(small);
    expect(pool.stats()).toEqual({ reused: 0, allocated: 0, pooledBytes: 0 });
  });

  it('refuses a negative limit', () => {
    expect(() => new BytePool(-1)).toThrow(/limitBytes/);
  });

  it('lets a pooled writer grow past its expected size and give back what it outgrew', () => {
    const pool = new BytePool(1 << 24);
    const values = Float32Array.from({ length: 40_000 }, (_, i) => i / 7);
    const writer = new JsonBytesWriter(MIN_POOLED_BYTES, pool).raw('[').float32s(values).raw(']');
    const text = Buffer.from(writer.finish()).toString('utf8');
    const parsed = JSON.parse(text) as number[];
    expect(parsed).toHaveLength(values.length);
    parsed.forEach((v, i) => expect(Math.fround(v)).toBe(values[i]));
    expect(pool.stats().allocated).toBeGreaterThan(1); // it grew
    const held = pool.stats().pooledBytes;
    writer.release();
    expect(pool.stats().pooledBytes).toBeGreaterThan(held);
  });
});

describe('reply bodies in pooled buffers (sendJson over HTTP)', () => {
  let server: Server;
  let url: string;
  /** Bodies by path: /big/<fill> is 300 kB of one repeated letter, /chunked is sent without a
   * length. */
  const bigBody = (fill: string) => JSON.stringify({ fill: fill.repeat(300_000) });

  beforeAll(async () => {
    server = createServer((req, res) => {
      const path = req.url ?? '';
      if (path.startsWith('/big/')) {
        const body = bigBody(path.slice('/big/'.length));
        res
          .writeHead(200, {
            'content-type': 'application/json',
            'content-length': String(Buffer.byteLength(body)),
          })
          .end(body);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"fill":"');
      res.end(`${'z'.repeat(200_000)}"}`);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const get = (route: string) =>
    sendJson(
      { engine: 'vLLM', endpoint: 'test', url, route },
      { method: 'GET', timeoutMs: 10_000, timers: realTimers },
    );

  it('reuses a released body buffer without mixing bytes between replies', async () => {
    const kept = await get('/big/a'); // never released: its bytes must stay as they came
    const first = await get('/big/b');
    expect(Buffer.from(first.bytes!).toString()).toBe(bigBody('b'));
    first.release!();
    const before = processBytePool.stats().reused;
    const second = await get('/big/c');
    expect(processBytePool.stats().reused).toBe(before + 1);
    expect(Buffer.from(second.bytes!).toString()).toBe(bigBody('c'));
    expect(second.text).toBe(bigBody('c'));
    expect(Buffer.from(kept.bytes!).toString()).toBe(bigBody('a'));
    second.release!();
  });

  it('refuses to read a released reply, except what was read before', async () => {
    const reply = await get('/big/d');
    const text = reply.text;
    reply.release!();
    reply.release!(); // twice: harmless
    expect(() => reply.bytes).toThrow(/after release/);
    expect(reply.text).toBe(text);
    const unread = await get('/big/e');
    unread.release!();
    expect(() => unread.json).toThrow(/after release/);
  });

  it('reads a body sent without a length whole (not from the pool)', async () => {
    const reply = await get('/chunked');
    expect((reply.json as { fill: string }).fill).toHaveLength(200_000);
    const before = processBytePool.stats();
    reply.release!();
    expect(processBytePool.stats()).toEqual(before);
  });
});
