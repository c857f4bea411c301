import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSearxngFixture } from '../../test/support/searxngFixture.ts';
import type { Fixture } from '../../test/support/httpFixture.ts';
import { SearchEndpoints } from './endpoints.ts';
import { SearxngBackend } from './searxng.ts';
import { SearchBackendError } from './types.ts';

let fixture: Fixture;
beforeAll(async () => {
  fixture = await startSearxngFixture();
});
afterAll(() => fixture.close());

async function failure(promise: Promise<unknown>): Promise<SearchBackendError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SearchBackendError);
  return err as SearchBackendError;
}

describe('SearXNG backend against a fixture of the documented JSON shape', () => {
  it('sends GET /search?q=…&format=json and maps title/url/content', async () => {
    const backend = new SearxngBackend('web', {
      baseUrl: fixture.baseUrl,
      language: 'en',
      safesearch: 1,
    });
    const results = await backend.search('mom test', 10);
    expect(results[0]).toEqual({
      title: 'Y Combinator',
      url: 'https://en.wikipedia.org/wiki/Y_Combinator',
      snippet: 'Y Combinator launched in March 2005.',
    });
    expect(results[2]?.snippet).toBe(''); // content: null
    const sent = new URL(fixture.requests.at(-1)?.url ?? '', 'http://x');
    expect(sent.pathname).toBe('/search');
    expect(Object.fromEntries(sent.searchParams)).toEqual({
      q: 'mom test',
      format: 'json',
      language: 'en',
      safesearch: '1',
    });
  });

  it('truncates to the limit (SearXNG has no result-count parameter)', async () => {
    const backend = new SearxngBackend('web', { baseUrl: fixture.baseUrl });
    expect(await backend.search('many', 10)).toHaveLength(10);
  });

  it('times out with a clear error', async () => {
    const backend = new SearxngBackend('web', { baseUrl: fixture.baseUrl, timeoutMs: 100 });
    const err = await failure(backend.search('slow', 10));
    expect(err.code).toBe('timeout');
    expect(err.message).toBe("searxng 'web': no response within 100 ms");
  });

  it('reports HTTP errors, non-JSON bodies and malformed results', async () => {
    const backend = new SearxngBackend('web', { baseUrl: fixture.baseUrl });
    expect(await failure(backend.search('boom', 10))).toMatchObject({
      code: 'http_status',
      status: 500,
    });
    expect((await failure(backend.search('garbage', 10))).code).toBe('bad_response');
    expect((await failure(backend.search('broken', 10))).message).toBe(
      "searxng 'web': results[1].url: must be a string",
    );
  });

  it('explains a 403 (json format not enabled in settings.yml)', async () => {
    const backend = new SearxngBackend('web', { baseUrl: `${fixture.baseUrl}/nojson` });
    const err = await failure(backend.search('x', 1));
    expect(err).toMatchObject({ code: 'format_disabled', status: 403 });
    expect(err.message).toMatch(/enable 'json' in search.formats/);
  });

  it('reports connection failures as network errors', async () => {
    const backend = new SearxngBackend('web', { baseUrl: 'http://127.0.0.1:1' });
    expect((await failure(backend.search('x', 1))).code).toBe('network');
  });

  it('resolves backends by endpoint name', () => {
    const endpoints = new SearchEndpoints({
      web: { kind: 'searxng', baseUrl: fixture.baseUrl },
      local: { kind: 'local', documents: [] },
    });
    expect(endpoints.get('web')).toBeInstanceOf(SearxngBackend);
    expect(() => endpoints.get('nope')).toThrow(
      "unknown search endpoint 'nope' (registered: web, local)",
    );
    expect(
      () => new SearchEndpoints({ bad: { kind: 'searxng', baseUrl: 'searxng:8080' } }),
    ).toThrow(/must be an http\(s\) URL/);
  });
});
