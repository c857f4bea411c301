// search_web limits of docs/recipe.md §6 (≤ 10 results per call, query ≤ 250 characters, ≤ 5 calls per
// rollout) and the rendering budget of tool outputs. Parsed once, then passed down frozen. The
// limits carry the run spec's names (grpo `tools`), and their caps and defaults are the spec's
// (@anneal/protocol TOOL_LIMIT_CAPS, TOOL_LIMIT_DEFAULTS): one definition for schema and tool.
import { TOOL_LIMIT_CAPS, TOOL_LIMIT_DEFAULTS, type ToolLimits } from '@anneal/protocol';

export interface SearchLimits extends ToolLimits {
  /** Results requested per call, 1..10 (docs/recipe.md §6 upper bound). */
  resultsPerCall: number;
  /** Longest accepted query in characters (code points), 1..250; longer = failed call. */
  maxQueryLength: number;
  /** Calls per rollout; calls beyond it are refused. Default 5; the budget-forced eval
   * protocol (docs/recipe.md §8) sweeps 0..10. */
  maxCallsPerRollout: number;
  /** Whether a refused call also counts as failed (in e_i). Default true: c̃_i = c_i − e_i
   * then counts calls that reached the backend, and c̃_i ≤ maxCallsPerRollout always holds. */
  refusedCountsAsFailed: boolean;
}

export interface RenderBudget {
  /** Results rendered per call (≤ the limits' resultsPerCall). */
  resultsPerCall: number;
  /** Snippet characters kept per result (longer snippets end with '…'). */
  snippetChars: number;
  /** Characters of the whole rendered output. */
  totalChars: number;
  includeTitle: boolean;
  includeUrl: boolean;
}

export const DEFAULT_LIMITS: Readonly<SearchLimits> = Object.freeze({
  ...TOOL_LIMIT_DEFAULTS,
  refusedCountsAsFailed: true,
});

export const DEFAULT_RENDER: Readonly<RenderBudget> = Object.freeze({
  resultsPerCall: TOOL_LIMIT_DEFAULTS.resultsPerCall,
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
  checkInt('resultsPerCall', limits.resultsPerCall, 1, TOOL_LIMIT_CAPS.resultsPerCall);
  checkInt('maxQueryLength', limits.maxQueryLength, 1, TOOL_LIMIT_CAPS.maxQueryLength);
  checkInt('maxCallsPerRollout', limits.maxCallsPerRollout, 0, TOOL_LIMIT_CAPS.maxCallsPerRollout);
  return Object.freeze(limits);
}

export function resolveRender(
  partial: Partial<RenderBudget> = {},
  limits: Readonly<SearchLimits> = DEFAULT_LIMITS,
): Readonly<RenderBudget> {
  const render = { ...DEFAULT_RENDER, resultsPerCall: limits.resultsPerCall, ...partial };
  checkInt('render.resultsPerCall', render.resultsPerCall, 1, limits.resultsPerCall);
  checkInt('render.snippetChars', render.snippetChars, 1, 100_000);
  checkInt('render.totalChars', render.totalChars, 1, 1_000_000);
  return Object.freeze(render);
}
