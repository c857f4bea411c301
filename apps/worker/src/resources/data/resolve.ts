// What a run's data and tools resolve to: the catalogue (runtime's, else the built-in tasks),
// weighted pools for a spec's `data.mix` (unknown sources named by JSON pointer), the
// search_web tool with the spec's limits (docs/recipe.md §6), and the context window rollouts fit in.
import { SearchWebTool, type SearchLimits } from '@anneal/envs';
import type { DataSource, ToolLimits } from '@anneal/protocol';
import type { WeightedPool } from '../../executors/common/mix-batch.ts';
import { RunSetupError } from '../../errors.ts';
import type { RunResources } from '../../executors/types.ts';
import { defaultDataCatalog } from './builtin-catalog.ts';
import { checkSource, type DataCatalog, type DatasetUse } from './catalog.ts';

export function catalogOf(resources: RunResources): DataCatalog {
  return resources.data ?? defaultDataCatalog();
}

/** Pools for `mix`, each source checked against the catalogue's `use` datasets. */
export function mixPools<T>(
  catalog: DataCatalog,
  mix: readonly DataSource[],
  use: DatasetUse,
  items: (source: string) => readonly T[],
): WeightedPool<T>[] {
  return mix.map((entry, i) => {
    checkSource(catalog, use, entry.source, `/data/mix/${i}/source`);
    return { name: entry.source, weight: entry.weight, items: items(entry.source) };
  });
}

/** Longest sequence a rollout may reach (prompt + generated + tool outputs). */
export function maxContextTokens(resources: RunResources): number {
  return (
    resources.maxContextTokens ?? catalogOf(resources).maxContextTokens ?? Number.MAX_SAFE_INTEGER
  );
}

/** search_web with the run's limits; the backend's own caps (e.g. 1 result for the built-in
 * corpus, sized for a 256-token context) apply when stricter. */
export function createSearchTool(
  resources: RunResources,
  limits: ToolLimits,
  field: string,
): SearchWebTool {
  const search = resources.search
    ? { backend: resources.search, options: undefined }
    : catalogOf(resources).search;
  if (search === undefined) {
    throw new RunSetupError(
      `${field}: this run needs a search backend (endpoints.search) and none is set`,
    );
  }
  const capResults = search.options?.limits?.resultsPerCall ?? limits.resultsPerCall;
  const merged: Partial<SearchLimits> = {
    ...search.options?.limits,
    resultsPerCall: Math.min(limits.resultsPerCall, capResults),
    maxQueryLength: limits.maxQueryLength,
    maxCallsPerRollout: limits.maxCallsPerRollout,
  };
  const render = search.options?.render;
  try {
    return new SearchWebTool(search.backend, {
      limits: merged,
      ...(render
        ? {
            render: {
              ...render,
              resultsPerCall: Math.min(
                render.resultsPerCall ?? merged.resultsPerCall!,
                merged.resultsPerCall!,
              ),
            },
          }
        : {}),
    });
  } catch (error) {
    // Limits the tool refuses fail the run at once: a retry would refuse them again.
    throw new RunSetupError(`${field}: ${(error as Error).message}`, { cause: error });
  }
}
