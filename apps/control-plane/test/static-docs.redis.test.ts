// GET /docs/static/...: the Swagger UI's static files. A path that climbs out of the static root
// (`%2e%2e%5c`), or holds a NUL, is refused by @fastify/static (send's Forbidden / NotFound errors);
// those must leave as 403/404 problem+json, never 500 ANNEAL_ERR_INTERNAL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestPlane, testPlane } from './helpers.ts';

let plane: TestPlane;
beforeAll(async () => {
  plane = await testPlane();
});
afterAll(async () => {
  await plane.cleanup();
});

describe('static docs paths', () => {
  it('serves a real static file', async () => {
    const res = await plane.app.inject({ url: '/docs/static/swagger-ui.css' });
    expect(res.statusCode).toBe(200);
  });

  it.each([
    '/docs/static/%2e%2e/package.json',
    '/docs/static/%2e%2e/%2e%2e/package.json',
    '/docs/static/%2E%2E/index.html',
    '/docs/static/..%2fpackage.json',
    '/docs/static/%2e%2e%2f%2e%2e%2fpackage.json',
    '/docs/static/%2e%2e%5cpackage.json',
    '/docs/static/%2e%2e%5c%2e%2e%5cpackage.json',
    '/docs/static/%00',
    '/docs/static/a%00b.js',
    '/docs/static/no-such-file.js',
  ])('%s answers 403/404 problem+json', async (url) => {
    const res = await plane.app.inject({ url });
    expect([403, 404], res.body).toContain(res.statusCode);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    const body = res.json() as { code: string; status: number };
    expect(body.code).toBe(
      res.statusCode === 403 ? 'ANNEAL_ERR_FORBIDDEN' : 'ANNEAL_ERR_NOT_FOUND',
    );
    expect(body.status).toBe(res.statusCode);
  });
});
