// Local corpus searched with BM25 (minisearch): the search backend of the built-in tasks and of
// offline runs. Exact term matching (no fuzzy/prefix), so results are deterministic.
import MiniSearch from 'minisearch';
import type { SearchBackend, SearchResult } from './types.ts';

export interface CorpusDocument {
  id: string;
  title: string;
  text: string;
  /** Defaults to `local://{id}`. */
  url?: string;
}

export interface LocalCorpusOptions {
  /** BM25 weight of a title match relative to a text match (default 3). */
  titleBoost?: number;
}

interface IndexedDoc {
  id: string;
  title: string;
  text: string;
  url: string;
}

export class LocalCorpusBackend implements SearchBackend {
  private readonly index: MiniSearch<IndexedDoc>;
  private readonly titleBoost: number;

  constructor(
    readonly name: string,
    documents: readonly CorpusDocument[],
    options: LocalCorpusOptions = {},
  ) {
    this.titleBoost = options.titleBoost ?? 3;
    this.index = new MiniSearch<IndexedDoc>({
      fields: ['title', 'text'],
      storeFields: ['title', 'text', 'url'],
    });
    const seen = new Set<string>();
    for (const doc of documents) {
      if (seen.has(doc.id)) throw new Error(`corpus '${name}': duplicate document id '${doc.id}'`);
      seen.add(doc.id);
    }
    this.index.addAll(documents.map((d) => ({ ...d, url: d.url ?? `local://${d.id}` })));
  }

  get size(): number {
    return this.index.documentCount;
  }

  search(query: string, limit: number): Promise<SearchResult[]> {
    return Promise.resolve(this.searchSync(query, limit));
  }

  /** The same search, synchronously (data generation needs no event-loop turn). */
  searchSync(query: string, limit: number): SearchResult[] {
    const hits = this.index.search(query, {
      boost: { title: this.titleBoost },
      prefix: false,
      fuzzy: false,
      combineWith: 'OR',
    });
    return hits.slice(0, limit).map((hit) => ({
      title: String(hit['title']),
      url: String(hit['url']),
      snippet: String(hit['text']),
    }));
  }
}
