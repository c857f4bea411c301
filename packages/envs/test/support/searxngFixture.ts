// SearXNG JSON API fixture following the documented response shape field for field
// (docs.searxng.org/dev/search_api): top-level query, number_of_results, results, answers,
// corrections, infoboxes, suggestions, unresponsive_engines; each result url, title, content,
// engine, parsed_url, template, engines, positions, score, category, publishedDate.
import type { ServerResponse } from 'node:http';
import { sendJson, startFixture } from './httpFixture.ts';
import type { Fixture } from './httpFixture.ts';

export const PAGES = [
  {
    url: 'https://en.wikipedia.org/wiki/Y_Combinator',
    title: 'Y Combinator',
    content: 'Y Combinator launched in March 2005.',
  },
  {
    url: 'https://example.org/mom-test',
    title: 'The Mom Test',
    content: 'A book by Rob Fitzpatrick about customer interviews.',
  },
  { url: 'https://example.org/rob', title: 'Rob Fitzpatrick', content: null },
];

function searxResult(page: (typeof PAGES)[number], i: number) {
  return {
    url: page.url,
    title: page.title,
    content: page.content,
    engine: 'duckduckgo',
    parsed_url: ['https', new URL(page.url).host, new URL(page.url).pathname, '', '', ''],
    template: 'default.html',
    engines: ['duckduckgo', 'brave'],
    positions: [i + 1, i + 2],
    score: 2 / (i + 1),
    category: 'general',
    publishedDate: null,
  };
}

/** Behaviour by query: 'slow' never answers, 'boom' is a 500, 'garbage' is not JSON,
 * 'broken' has a result without url, 'many' has 25 results; anything else returns PAGES. */
export function startSearxngFixture(): Promise<Fixture> {
  return startFixture((req, _body, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://fixture');
    // '/nojson/search' plays an instance whose settings.yml does not enable the json format.
    const jsonDisabled = url.pathname === '/nojson/search';
    if (url.pathname !== '/search' && !jsonDisabled)
      return sendJson(res, 404, { error: 'not found' });
    if (jsonDisabled || url.searchParams.get('format') !== 'json') {
      res.writeHead(403, { 'content-type': 'text/html' });
      return res.end('<html><body>403 Forbidden</body></html>');
    }
    const q = url.searchParams.get('q') ?? '';
    if (q === 'slow') return; // never answers: the client's timeout must fire
    if (q === 'boom') {
      res.writeHead(500, { 'content-type': 'text/html' });
      return res.end('Internal Server Error');
    }
    if (q === 'garbage') {
      res.writeHead(200, { 'content-type': 'text/html' });
      return res.end('<html>not json</html>');
    }
    const pages =
      q === 'many'
        ? Array.from({ length: 25 }, (_, i) => ({
            url: `https://example.org/${i}`,
            title: `Page ${i}`,
            content: `Snippet ${i}`,
          }))
        : PAGES;
    const results = pages.map(searxResult);
    if (q === 'broken') delete (results[1] as Partial<(typeof results)[number]>).url;
    sendJson(res, 200, {
      query: q,
      number_of_results: results.length,
      results,
      answers: [],
      corrections: [],
      infoboxes: [],
      suggestions: ['related search'],
      unresponsive_engines: [['google', 'timeout']],
    });
  });
}
