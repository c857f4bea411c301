import { describe, expect, it } from 'vitest';
import { LocalCorpusBackend } from './localCorpus.ts';
import { resolveLimits, resolveRender } from './limits.ts';
import { NO_RESULTS_TEXT, renderResults } from './render.ts';
import { SearchWebTool } from './searchWeb.ts';
import { SearchBackendError } from './types.ts';
import type { SearchBackend } from './types.ts';

const docs = Array.from({ length: 15 }, (_, i) => ({
  id: `d${i}`,
  title: `Doc ${i}`,
  text: `alpha item ${i}`,
}));
const corpus = new LocalCorpusBackend('local', docs);

describe('search_web limits (docs/recipe.md §6)', () => {
  it('rejects limits above the recipe caps', () => {
    expect(() => resolveLimits({ resultsPerCall: 11 })).toThrow(
      /^resultsPerCall: must be an integer in \[1, 10\]/,
    );
    expect(() => resolveLimits({ maxQueryLength: 251 })).toThrow(/maxQueryLength/);
    expect(() => resolveLimits({ maxCallsPerRollout: 101 })).toThrow(
      /^maxCallsPerRollout: must be an integer in \[0, 100\]/,
    );
    expect(() =>
      resolveRender({ resultsPerCall: 5 }, resolveLimits({ resultsPerCall: 3 })),
    ).toThrow(/render\.resultsPerCall/);
    expect(resolveLimits()).toMatchObject({
      resultsPerCall: 10,
      maxQueryLength: 250,
      maxCallsPerRollout: 5,
    });
  });

  it('returns at most resultsPerCall results per call', async () => {
    const session = new SearchWebTool(corpus, { limits: { resultsPerCall: 4 } }).session();
    const rec = await session.call('alpha');
    expect(rec).toMatchObject({ status: 'ok', failed: false, resultCount: 4 });
    expect(rec.output.split('\n').filter((l) => l.startsWith('['))).toHaveLength(4);
  });

  it('counts a query over 250 characters as a failed call', async () => {
    const session = new SearchWebTool(corpus).session();
    const rec = await session.call('x'.repeat(251));
    expect(rec).toMatchObject({ status: 'query_too_long', failed: true, resultCount: 0 });
    expect(rec.output).toBe('error: query has 251 characters, limit 250');
    expect(await session.call('é'.repeat(250))).toMatchObject({ status: 'ok' }); // code points, not UTF-16 units
    expect([session.calls, session.errors]).toEqual([2, 1]);
  });

  it('refuses calls beyond maxCallsPerRollout and counts them as failed by default', async () => {
    const session = new SearchWebTool(corpus, { limits: { maxCallsPerRollout: 2 } }).session();
    await session.call('alpha');
    await session.call('');
    const third = await session.call('alpha');
    expect(third).toMatchObject({
      status: 'refused',
      failed: true,
      output: 'error: call limit reached (2)',
    });
    expect(session.malformed('x')).toMatchObject({ status: 'refused' });
    expect([session.calls, session.errors, session.refused]).toEqual([4, 3, 2]);
  });

  it('can count refused calls as not failed (so they enter c̃_i)', async () => {
    const session = new SearchWebTool(corpus, {
      limits: { maxCallsPerRollout: 0, refusedCountsAsFailed: false },
    }).session();
    expect(await session.call('alpha')).toMatchObject({ status: 'refused', failed: false });
    expect([session.calls, session.errors, session.refused]).toEqual([1, 0, 1]);
  });

  it('records backend errors as failed calls without throwing', async () => {
    const failing: SearchBackend = {
      name: 'down',
      search: () =>
        Promise.reject(
          new SearchBackendError('timeout', "searxng 'down': no response within 5 ms"),
        ),
    };
    const session = new SearchWebTool(failing).session();
    const rec = await session.call('q');
    expect(rec).toMatchObject({
      status: 'backend_error',
      failed: true,
      output: 'error: search failed (timeout)',
    });
    expect(rec.error).toMatch(/no response within 5 ms/);
  });

  it('propagates programming errors instead of hiding them as failed calls', async () => {
    const broken: SearchBackend = {
      name: 'bug',
      search: () => Promise.reject(new TypeError('boom')),
    };
    await expect(new SearchWebTool(broken).session().call('q')).rejects.toThrow(TypeError);
  });
});

describe('result rendering', () => {
  const results = [
    { title: 'Vek', url: 'local://p1', snippet: 'Vek lives in Oru.' },
    { title: 'Oru', url: 'local://t1', snippet: 'Oru is in Talm.   It is small.' },
  ];

  it('renders compactly for a small context', () => {
    const budget = resolveRender({
      resultsPerCall: 1,
      includeTitle: false,
      includeUrl: false,
      snippetChars: 40,
    });
    expect(renderResults(results, budget)).toBe('Vek lives in Oru.');
  });

  it('clips snippets and stops before the total budget', () => {
    const budget = resolveRender({ snippetChars: 10, totalChars: 40 });
    expect(renderResults(results, budget)).toBe('[1] Vek (local://p1)\nVek lives…');
    expect(renderResults([], budget)).toBe(NO_RESULTS_TEXT);
  });
});
