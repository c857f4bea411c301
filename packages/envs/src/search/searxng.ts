// SearXNG JSON API client: GET {baseUrl}/search?q=…&format=json (docs.searxng.org/dev/search_api).
// Response: { query, number_of_results, results: [{ url, title, content, engine, … }], answers,
// suggestions, infoboxes, unresponsive_engines }. The JSON format must be enabled in the
// instance's settings.yml (`search.formats`), otherwise SearXNG answers 403.
import { SearchBackendError } from './types.ts';
import type { SearchBackend, SearchResult } from './types.ts';

export interface SearxngConfig {
  /** Instance root, e.g. `http://searxng:8080` (the endpoint registry resolves names to it). */
  baseUrl: string;
  /** Per-request timeout (default 10 s). */
  timeoutMs?: number;
  language?: string;
  categories?: string;
  engines?: string;
  /** 0, 1 or 2. */
  safesearch?: 0 | 1 | 2;
}

export class SearxngBackend implements SearchBackend {
  private readonly timeoutMs: number;

  constructor(
    readonly name: string,
    private readonly config: SearxngConfig,
  ) {
    if (!/^https?:\/\//.test(config.baseUrl)) {
      throw new Error(`searxng endpoint '${name}': baseUrl must be an http(s) URL`);
    }
    this.timeoutMs = config.timeoutMs ?? 10_000;
  }

  private url(query: string): string {
    const url = new URL('search', this.config.baseUrl.replace(/\/?$/, '/'));
    url.searchParams.set('q', query);
    url.searchParams.set('format', 'json');
    if (this.config.language) url.searchParams.set('language', this.config.language);
    if (this.config.categories) url.searchParams.set('categories', this.config.categories);
    if (this.config.engines) url.searchParams.set('engines', this.config.engines);
    if (this.config.safesearch !== undefined) {
      url.searchParams.set('safesearch', String(this.config.safesearch));
    }
    return url.toString();
  }

  async search(query: string, limit: number, signal?: AbortSignal): Promise<SearchResult[]> {
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
    let response: Response;
    try {
      response = await fetch(this.url(query), {
        headers: { accept: 'application/json' },
        signal: combined,
      });
    } catch (err) {
      throw this.fetchError(err, timeout, signal);
    }
    const body = await this.readBody(response, timeout, signal);
    return parseSearxngResults(this.name, body).slice(0, limit);
  }

  private async readBody(
    response: Response,
    timeout: AbortSignal,
    signal?: AbortSignal,
  ): Promise<unknown> {
    if (response.status === 403) {
      await response.body?.cancel();
      throw new SearchBackendError(
        'format_disabled',
        `searxng '${this.name}': 403 Forbidden; enable 'json' in search.formats of settings.yml`,
        403,
      );
    }
    if (!response.ok) {
      const text = await response.text().catch(() => '');
      throw new SearchBackendError(
        'http_status',
        `searxng '${this.name}': HTTP ${response.status}${text ? `: ${text.slice(0, 200)}` : ''}`,
        response.status,
      );
    }
    let text: string;
    try {
      text = await response.text();
    } catch (err) {
      throw this.fetchError(err, timeout, signal);
    }
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new SearchBackendError(
        'bad_response',
        `searxng '${this.name}': response is not JSON: ${text.slice(0, 120)}`,
      );
    }
  }

  private fetchError(err: unknown, timeout: AbortSignal, signal?: AbortSignal): SearchBackendError {
    if (signal?.aborted)
      return new SearchBackendError('aborted', `searxng '${this.name}': aborted`);
    if (timeout.aborted) {
      return new SearchBackendError(
        'timeout',
        `searxng '${this.name}': no response within ${this.timeoutMs} ms`,
      );
    }
    const cause = err instanceof Error ? (err.cause ?? err) : err;
    const detail = cause instanceof Error ? cause.message : String(cause);
    return new SearchBackendError('network', `searxng '${this.name}': ${detail}`);
  }
}

/** Validate SearXNG's JSON body field by field; `content` may be absent (some engines omit it). */
export function parseSearxngResults(name: string, body: unknown): SearchResult[] {
  const bad = (what: string) =>
    new SearchBackendError('bad_response', `searxng '${name}': ${what}`);
  if (typeof body !== 'object' || body === null) throw bad('body is not a JSON object');
  const results = (body as { results?: unknown }).results;
  if (!Array.isArray(results)) throw bad('results: must be an array');
  return results.map((raw: unknown, i) => {
    const r = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
    if (typeof r['url'] !== 'string') throw bad(`results[${i}].url: must be a string`);
    if (typeof r['title'] !== 'string') throw bad(`results[${i}].title: must be a string`);
    const content = r['content'];
    if (content !== undefined && content !== null && typeof content !== 'string') {
      throw bad(`results[${i}].content: must be a string`);
    }
    return {
      title: r['title'],
      url: r['url'],
      snippet: typeof content === 'string' ? content : '',
    };
  });
}
