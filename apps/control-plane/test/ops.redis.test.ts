// Health, readiness, Prometheus metrics, OpenAPI docs and the per-token rate limit.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { buildApp } from '../src/app.ts';
import { TOKENS, type TestPlane, auth, submit, testOperatorConfig, testPlane } from './helpers.ts';

let plane: TestPlane;
beforeEach(async () => {
  plane = await testPlane();
});
afterEach(async () => {
  await plane.cleanup();
});

describe('health and readiness', () => {
  it('serves /healthz and /readyz without a token', async () => {
    expect((await plane.app.inject('/healthz')).json()).toEqual({ status: 'ok' });
    expect((await plane.app.inject('/readyz')).json()).toEqual({ status: 'ready' });
  });

  it('answers 503 problem+json on /readyz when Redis is unreachable', async () => {
    const dead = new Redis('redis://127.0.0.1:1', {
      lazyConnect: true,
      maxRetriesPerRequest: null,
      retryStrategy: () => 200,
    });
    dead.on('error', () => {});
    dead.connect().catch(() => {});
    const app = await buildApp({
      operator: plane.operator,
      redis: dead,
      prefix: plane.prefix,
      createBlockingClient: () => dead,
      defaultMetrics: false,
    });
    try {
      const res = await app.inject('/readyz');
      expect(res.statusCode).toBe(503);
      expect(res.json().code).toBe('ANNEAL_ERR_UNAVAILABLE');
    } finally {
      await app.close().catch(() => {});
      dead.disconnect();
    }
  });
});

describe('/metrics', () => {
  it('exports request counts by route and queue depth per pool', async () => {
    await submit(plane.app, 'kind: sft');
    await plane.app.inject({ method: 'GET', url: '/v1/runs', headers: auth(TOKENS.acmeViewer) });
    const text = (await plane.app.inject('/metrics')).body;
    expect(text).toMatch(
      /anneal_http_requests_total\{route="\/v1\/runs",method="POST",status_code="201"\} 1/,
    );
    expect(text).toMatch(/anneal_http_request_duration_seconds_bucket\{[^}]*route="\/v1\/runs"/);
    expect(text).toMatch(/anneal_queue_depth\{pool="default",state="prioritized"\} 1/);
    expect(text).toMatch(/anneal_pool_workers\{pool="gpu",state="online"\} 0/);
  });
});

describe('OpenAPI', () => {
  it('documents every route from the validating schemas', async () => {
    const doc = (await plane.app.inject('/docs/json')).json();
    expect(doc.openapi).toMatch(/^3\./);
    for (const path of [
      '/v1/runs',
      '/v1/runs/{id}',
      '/v1/runs/{id}/cancel',
      '/v1/runs/{id}/metrics',
      '/v1/runs/{id}/events',
      '/v1/pools',
      '/v1/workers',
      '/v1/workers/{id}/drain',
    ]) {
      expect(doc.paths[path], path).toBeDefined();
    }
    const body = doc.paths['/v1/runs'].post.requestBody.content;
    expect(Object.keys(body)).toContain('application/yaml');
    expect(JSON.stringify(body['application/json'].schema)).toContain('groupSize');
  });

  it('documents errors as application/problem+json, health/metrics, and Last-Event-ID', async () => {
    const doc = (await plane.app.inject('/docs/json')).json();
    const errorContentTypes = new Set<string>();
    for (const [path, methods] of Object.entries<Record<string, { responses: object }>>(doc.paths))
      for (const [method, operation] of Object.entries(methods))
        for (const [status, response] of Object.entries(operation.responses))
          if (/^[45]/.test(status)) {
            const types = Object.keys((response as { content?: object }).content ?? {});
            expect(types, `${method} ${path} ${status}`).toEqual(['application/problem+json']);
            types.forEach((t) => errorContentTypes.add(t));
          }
    expect([...errorContentTypes]).toEqual(['application/problem+json']);
    expect(doc.paths['/healthz']?.get).toBeDefined();
    expect(doc.paths['/readyz']?.get.responses['5XX']).toBeDefined();
    expect(doc.paths['/metrics']?.get).toBeDefined();
    const sseHeaders = doc.paths['/v1/runs/{id}/events'].get.parameters
      .filter((p: { in: string }) => p.in === 'header')
      .map((p: { name: string }) => p.name);
    expect(sseHeaders).toContain('last-event-id');
  });
});

/** Rate-limit windows are fixed and aligned to the epoch (rate-limit-store.ts): the calls a test
 * counts must fall in one 60 s window, so a test that starts within 5 s of a boundary waits past
 * it first. */
async function inOneWindow(): Promise<void> {
  const untilBoundary = 60_000 - (Date.now() % 60_000);
  if (untilBoundary < 5_000) await new Promise((r) => setTimeout(r, untilBoundary + 50));
}

describe('rate limit', () => {
  it('limits per token and answers 429 problem+json with retry-after', async () => {
    const call = (token: string) =>
      plane.app.inject({ method: 'GET', url: '/v1/runs', headers: auth(token) });
    await inOneWindow();
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await call(TOKENS.limited)).statusCode);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const limited = await call(TOKENS.limited);
    expect(limited.json()).toMatchObject({ code: 'ANNEAL_ERR_RATE_LIMITED', status: 429 });
    expect(limited.headers['retry-after']).toBeDefined();
    expect(limited.headers['content-type']).toMatch(/problem\+json/);
    expect((await call(TOKENS.acmeViewer)).statusCode).toBe(200);
  });
});

describe('rate limit without a valid token', () => {
  it('counts failed authentication per client IP: a brute force gets 429, not endless 401s', async () => {
    const strict = await testPlane({
      operator: testOperatorConfig({ rateLimit: { max: 3, windowSeconds: 60 } }),
    });
    try {
      const call = (headers: Record<string, string>, remoteAddress = '198.51.100.7') =>
        strict.app.inject({ method: 'GET', url: '/v1/runs', headers, remoteAddress });
      await inOneWindow();
      const statuses = [];
      for (let i = 0; i < 3; i++)
        statuses.push((await call(auth(`guess-${i}-0123456789abcdef`))).statusCode);
      expect(statuses).toEqual([401, 401, 401]);
      const limited = await call(auth('guess-3-0123456789abcdef'));
      expect(limited.statusCode).toBe(429);
      expect(limited.json()).toMatchObject({ code: 'ANNEAL_ERR_RATE_LIMITED', status: 429 });
      expect(limited.headers['content-type']).toMatch(/problem\+json/);
      expect(limited.headers['retry-after']).toBeDefined();
      // no Authorization header at all: the same IP's counter
      expect((await call({})).statusCode).toBe(429);
      // another IP has its own counter; a valid token is counted per token, not per IP
      expect((await call({}, '198.51.100.8')).statusCode).toBe(401);
      expect((await call(auth(TOKENS.acmeViewer))).statusCode).toBe(200);
    } finally {
      await strict.cleanup();
    }
  });
});

describe('POST /v1/runs media types', () => {
  it('text/plain is 415 problem+json, like any type that is not JSON or YAML', async () => {
    const res = await submit(plane.app, 'kind: sft', { contentType: 'text/plain' });
    expect(res.statusCode).toBe(415);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json().code).toBe('ANNEAL_ERR_UNSUPPORTED_MEDIA_TYPE');
    expect((await submit(plane.app, 'kind: sft')).statusCode).toBe(201); // YAML still accepted
  });
});

describe('unknown routes', () => {
  it('answers problem+json 404', async () => {
    const res = await plane.app.inject('/v2/nothing');
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ code: 'ANNEAL_ERR_NOT_FOUND', instance: '/v2/nothing' });
  });
});
