// Slow and non-reading clients, part 1: a request body trickled in a byte at a time. With a
// valid token it is answered 408 ANNEAL_ERR_REQUEST_TIMEOUT once requestTimeoutMs has passed and
// its connection closed (Fastify's default had turned Node's request timeout off: 1,000 of 1,000
// such connections were still held after 150 s). Without a token it is answered 401 at once and
// its connection closed, instead of staying open while the body trickles in.
// Fast variant here (small counts, short timeout); ANNEAL_SOAK=1 runs the sizes (1,000
// connections, a byte every 5 s, the default 30 s timeout) and records the figures for
// docs/reliability.md.
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordResult } from '../../worker/test/reliability/results.ts';
import { DEFAULT_SETTINGS } from '../src/context.ts';
import { type SlowClient, slowBody, statusOf } from './slow-clients.ts';
import { TOKENS, type TestPlane, eventually, testOperatorConfig, testPlane } from './helpers.ts';

const SOAK = process.env.ANNEAL_SOAK === '1';
const CLIENTS = SOAK ? 1000 : 20;
const EVERY_MS = SOAK ? 5_000 : 100;
const REQUEST_TIMEOUT_MS = SOAK ? DEFAULT_SETTINGS.requestTimeoutMs : 1_000;
const variant = SOAK ? 'soak' : 'fast';

let plane: TestPlane;
let port: number;
const clients: SlowClient[] = [];

beforeAll(async () => {
  plane = await testPlane({
    // The soak's 1,000 connections from one address and token would otherwise meet the default
    // rate limit (600 per 60 s) and be answered 429 before their body matters.
    operator: testOperatorConfig({ rateLimit: { max: 100_000, windowSeconds: 60 } }),
    settings: { requestTimeoutMs: REQUEST_TIMEOUT_MS, connectionsCheckMs: SOAK ? 1_000 : 100 },
  });
  await plane.app.listen({ host: '127.0.0.1', port: 0 });
  port = (plane.app.server.address() as AddressInfo).port;
});
afterAll(async () => {
  for (const client of clients) client.destroy();
  await plane.cleanup();
});

async function open(n: number, token?: string): Promise<SlowClient[]> {
  const opened: SlowClient[] = [];
  for (let i = 0; i < n; i++) {
    opened.push(await slowBody(port, { ...(token && { token }), everyMs: EVERY_MS }));
  }
  clients.push(...opened);
  return opened;
}

describe(`slow request bodies (${variant})`, () => {
  it('answers 408 and closes every trickling request that has a valid token', async () => {
    const slow = await open(CLIENTS, TOKENS.acmeSubmitter);
    await eventually(() => slow.every((c) => c.closed()), REQUEST_TIMEOUT_MS + 30_000);
    const statuses = slow.map((c) => statusOf(c.received()));
    expect(new Set(statuses)).toEqual(new Set([408]));
    expect(slow[0]?.received()).toContain('"code":"ANNEAL_ERR_REQUEST_TIMEOUT"');
    const closeMs = slow.map((c) => c.closedAfterMs() ?? Infinity);
    // Not before the timeout: a slow but live client gets its whole window.
    expect(Math.min(...closeMs)).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 50);
    await recordResult({
      scenario: 'slow request body, valid token',
      variant,
      lost: slow.filter((c) => !c.closed()).length,
      duplicated: 0,
      detectMs: Math.max(...closeMs),
      recoverMs: null,
      detail: `${CLIENTS} connections, 1 byte / ${EVERY_MS} ms, requestTimeout ${REQUEST_TIMEOUT_MS} ms: all answered 408 and closed (Lost = still held); Detect = slowest close`,
    });
  }, 120_000);

  it('answers 401 and closes every trickling request without a token', async () => {
    const slow = await open(CLIENTS);
    // Long before any request timeout could close them.
    await eventually(() => slow.every((c) => c.closed()), REQUEST_TIMEOUT_MS / 2);
    const statuses = slow.map((c) => statusOf(c.received()));
    expect(new Set(statuses)).toEqual(new Set([401]));
    expect(slow[0]?.received()).toMatch(/\r\nconnection: close\r\n/i);
    const closeMs = slow.map((c) => c.closedAfterMs() ?? Infinity);
    await recordResult({
      scenario: 'slow request body, no token',
      variant,
      lost: slow.filter((c) => !c.closed()).length,
      duplicated: 0,
      detectMs: Math.max(...closeMs),
      recoverMs: null,
      detail: `${CLIENTS} connections, 1 byte / ${EVERY_MS} ms: all answered 401 and closed at once (Lost = still held); Detect = slowest close`,
    });
  }, 120_000);
});
