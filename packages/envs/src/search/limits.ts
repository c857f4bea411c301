// search_web limits of docs/recipe.md §6 (≤ 10 results per call, query ≤ 250 characters, ≤ 5 calls per
// rollout) and the rendering budget of tool outputs. Parsed once, then passed down frozen.

export const RECIPE_MAX_RESULTS = 10;
export const RECIPE_MAX_QUERY_CHARS = 250;
export const RECIPE_MAX_CALLS = 5;

export interface SearchLimits {
  /** Results requested per call, 1..10 (docs/recipe.md §6 upper bound). */
  maxResults: number;
  /** Longest accepted query in characters (code points), 1..250; longer = failed call. */
  maxQueryChars: number;
  /** Calls per rollout; calls beyond it are refused. Default 5; the budget-forced eval
   * protocol (docs/recipe.md §8) sweeps 0..10. */
  maxCalls: number;
  /** Whether a refused call also counts as failed (in e_i). Default true: c̃_i = c_i − e_i
   * then counts calls that reached the backend, and c̃_i ≤ maxCalls always holds. */
  refusedCountsAsFailed: boolean;
}

export interface RenderBudget {
  /** Results rendered per call (≤ maxResults). */
  resultsPerCall: number;
  /** Snippet characters kept per result (longer snippets end with '…'). */
  snippetChars: number;
  /** Characters of the whole rendered output. */
  totalChars: number;
  includeTitle: boolean;
  includeUrl: boolean;
}

export const DEFAULT_LIMITS: Readonly<SearchLimits> = Object.freeze({
  maxResults: RECIPE_MAX_RESULTS,
  maxQueryChars: RECIPE_MAX_QUERY_CHARS,
  maxCalls: RECIPE_MAX_CALLS,
  refusedCountsAsFailed: true,
});

export const DEFAULT_RENDER: Readonly<RenderBudget> = Object.freeze({
  resultsPerCall: RECIPE_MAX_RESULTS,
  snippetChars: 300,
  totalChars: 4000,
  includeTitle: true,
  includeUrl: true,
});

function checkInt(field: string, value: number, min: number, max: number): void {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`${field}: must be an integer in [${min}, ${max}], got ${value}`);
  }
}

export function resolveLimits(partial: Partial<SearchLimits> = {}): Readonly<SearchLimits> {
  const limits = { ...DEFAULT_LIMITS, ...partial };
  checkInt('maxResults', limits.maxResults, 1, RECIPE_MAX_RESULTS);
  checkInt('maxQueryChars', limits.maxQueryChars, 1, RECIPE_MAX_QUERY_CHARS);
  checkInt('maxCalls', limits.maxCalls, 0, 100);
  return Object.freeze(limits);
}

export function resolveRender(
  partial: Partial<RenderBudget> = {},
  limits: Readonly<SearchLimits> = DEFAULT_LIMITS,
): Readonly<RenderBudget> {
  const render = { ...DEFAULT_RENDER, resultsPerCall: limits.maxResults, ...partial };
  checkInt('render.resultsPerCall', render.resultsPerCall, 1, limits.maxResults);
  checkInt('render.snippetChars', render.snippetChars, 1, 100_000);
  checkInt('render.totalChars', render.totalChars, 1, 1_000_000);
  return Object.freeze(render);
}
