// sendJson over real HTTP: a request that cannot be sent as it is (a header value with a line
// break, a malformed URL) fails at once with a coded, non-retryable error and reaches no server;
// withRetry then makes one attempt, not its five.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINE_ERROR_CODES, EngineError } from './errors.ts';
import { sendJson } from './request.ts';
import { withRetry } from './retry.ts';
import { realTimers } from './timing.ts';

describe('sendJson: requests that cannot be sent', () => {
  let server: Server;
  let url: string;
  let received = 0;

  beforeAll(async () => {
    server = createServer((_req, res) => {
      received += 1;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const send = (base: string, headers: Record<string, string>) =>
    sendJson(
      { engine: 'trainer', endpoint: 'test', url: base, route: '/api/v1/healthz' },
      { method: 'GET', timeoutMs: 10_000, timers: realTimers, headers },
    );

  it('sends a well-formed request (the control)', async () => {
    const before = received;
    const reply = await send(url, { authorization: 'Bearer key' });
    expect(reply.status).toBe(200);
    expect(received).toBe(before + 1);
  });

  it.each([
    ['a header value with a line break', () => url, { authorization: 'Bearer key\nx: y' }],
    ['a malformed URL', () => 'http://[::1', {}],
  ])(
    '%s: ANNEAL_ERR_ENGINE_INVALID_REQUEST, not retryable, nothing sent',
    async (_, base, headers) => {
      const before = received;
      let attempts = 0;
      const error = await withRetry(
        () => {
          attempts += 1;
          return send(base(), headers);
        },
        {
          policy: { attempts: 5, baseDelayMs: 1, maxDelayMs: 1 },
          rng: () => 0.5,
          sleep: async () => undefined,
        },
      ).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(EngineError);
      expect((error as EngineError).code).toBe(ENGINE_ERROR_CODES.invalidRequest);
      expect((error as EngineError).retryable).toBe(false);
      expect((error as EngineError).message).toContain('request not sent');
      expect(attempts).toBe(1);
      expect(received).toBe(before);
    },
  );
});
