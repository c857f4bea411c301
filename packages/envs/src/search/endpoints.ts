// Search backends by named endpoint: operators register names (never raw URLs in run specs);
// a run's `search_web` tool resolves its endpoint name here.
import { LocalCorpusBackend } from './localCorpus.ts';
import type { CorpusDocument, LocalCorpusOptions } from './localCorpus.ts';
import { SearxngBackend } from './searxng.ts';
import type { SearxngConfig } from './searxng.ts';
import type { SearchBackend } from './types.ts';

export type SearchEndpointConfig =
  | ({ kind: 'searxng' } & SearxngConfig)
  | ({ kind: 'local'; documents: readonly CorpusDocument[] } & LocalCorpusOptions);

export function createSearchBackend(name: string, config: SearchEndpointConfig): SearchBackend {
  switch (config.kind) {
    case 'searxng':
      return new SearxngBackend(name, config);
    case 'local':
      return new LocalCorpusBackend(name, config.documents, config);
  }
}

export class UnknownEndpointError extends Error {
  override readonly name = 'UnknownEndpointError';
}

export class SearchEndpoints {
  private readonly backends = new Map<string, SearchBackend>();

  constructor(configs: Readonly<Record<string, SearchEndpointConfig>> = {}) {
    for (const [name, config] of Object.entries(configs)) {
      this.register(createSearchBackend(name, config));
    }
  }

  /** Add a ready backend (e.g. the built-in tasks' corpus) under its own name. */
  register(backend: SearchBackend): void {
    if (this.backends.has(backend.name)) {
      throw new Error(`search endpoint '${backend.name}' is already registered`);
    }
    this.backends.set(backend.name, backend);
  }

  get(name: string): SearchBackend {
    const backend = this.backends.get(name);
    if (!backend) {
      const known = [...this.backends.keys()].join(', ') || 'none';
      throw new UnknownEndpointError(`unknown search endpoint '${name}' (registered: ${known})`);
    }
    return backend;
  }

  names(): string[] {
    return [...this.backends.keys()];
  }
}
