// Search backends behind one interface: the local BM25 corpus and SearXNG's JSON API.

export interface SearchResult {
  title: string;
  url: string;
  /** Text excerpt of the page (SearXNG `content`). */
  snippet: string;
}

export interface SearchBackend {
  /** The named endpoint this backend serves (for logs and errors). */
  readonly name: string;
  /** Up to `limit` results, best first. Throws `SearchBackendError` on failure. */
  search(query: string, limit: number, signal?: AbortSignal): Promise<SearchResult[]>;
}

export type SearchBackendErrorCode =
  'timeout' | 'aborted' | 'network' | 'http_status' | 'format_disabled' | 'bad_response';

export class SearchBackendError extends Error {
  override readonly name = 'SearchBackendError';
  constructor(
    readonly code: SearchBackendErrorCode,
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}
