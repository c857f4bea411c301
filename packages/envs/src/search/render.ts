// Compact text of search results for the model's context. The embedded model has ~200 tokens of
// context, so the number of results, the snippet length and the total size are all budgets.
import type { RenderBudget } from './limits.ts';
import type { SearchResult } from './types.ts';

export const NO_RESULTS_TEXT = 'no results';

function clip(text: string, max: number): string {
  const chars = [...text.replace(/\s+/g, ' ').trim()];
  return chars.length <= max ? chars.join('') : `${chars.slice(0, max - 1).join('')}…`;
}

function renderOne(result: SearchResult, budget: RenderBudget, index: number): string {
  const snippet = clip(result.snippet, budget.snippetChars);
  if (!budget.includeTitle && !budget.includeUrl) return snippet;
  const head = [
    budget.includeTitle ? clip(result.title, budget.snippetChars) : '',
    budget.includeUrl ? `(${result.url})` : '',
  ]
    .filter((part) => part.length > 0)
    .join(' ');
  return `[${index + 1}] ${head}\n${snippet}`;
}

/** Render results best-first; stops before the result that would overflow `totalChars`
 * (the first result is clipped instead, so a call never renders empty when results exist). */
export function renderResults(results: readonly SearchResult[], budget: RenderBudget): string {
  if (results.length === 0) return NO_RESULTS_TEXT;
  const parts: string[] = [];
  let used = 0;
  for (const [i, result] of results.slice(0, budget.resultsPerCall).entries()) {
    const text = renderOne(result, budget, i);
    const cost = text.length + (parts.length > 0 ? 1 : 0);
    if (used + cost > budget.totalChars) {
      if (parts.length === 0) parts.push(clip(text, budget.totalChars));
      break;
    }
    parts.push(text);
    used += cost;
  }
  return parts.join('\n');
}
