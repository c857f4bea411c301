import { ByteTokenizer } from '@anneal/engines';
import {
  LocalCorpusBackend,
  RECIPE_MAX_CALLS,
  RECIPE_MAX_QUERY_CHARS,
  RECIPE_MAX_RESULTS,
  resolveLimits,
} from '@anneal/envs';
import { TOOL_LIMIT_CAPS } from '@anneal/protocol';
import { describe, expect, it } from 'vitest';
import { RunSetupError } from '../../errors.ts';
import type { RunResources } from '../types.ts';
import { createSearchTool } from './resolve.ts';

const resources = {
  tokenizer: new ByteTokenizer(),
  search: new LocalCorpusBackend('docs', [{ id: 'a', title: 'A', text: 'alpha beta' }]),
} as unknown as RunResources;

describe('search_web limits', () => {
  it('the run-spec caps are exactly what the tool accepts (docs/recipe.md §6)', () => {
    expect(TOOL_LIMIT_CAPS.resultsPerCall).toBe(RECIPE_MAX_RESULTS);
    expect(TOOL_LIMIT_CAPS.queryLength).toBe(RECIPE_MAX_QUERY_CHARS);
    expect(RECIPE_MAX_CALLS).toBeLessThanOrEqual(TOOL_LIMIT_CAPS.callsPerRollout);
    expect(() =>
      resolveLimits({
        maxResults: TOOL_LIMIT_CAPS.resultsPerCall,
        maxQueryChars: TOOL_LIMIT_CAPS.queryLength,
        maxCalls: TOOL_LIMIT_CAPS.callsPerRollout,
      }),
    ).not.toThrow();
    expect(() => resolveLimits({ maxCalls: TOOL_LIMIT_CAPS.callsPerRollout + 1 })).toThrow(
      RangeError,
    );
  });

  it('limits the tool refuses are a setup error naming the field (never retried)', () => {
    const build = () =>
      createSearchTool(
        resources,
        { resultsPerCall: 10, maxQueryLength: 4096, maxCalls: 5 },
        '/tools',
      );
    expect(build).toThrow(RunSetupError);
    expect(build).toThrow(/^\/tools: maxQueryChars: must be an integer in \[1, 250\], got 4096$/);
    const ok = createSearchTool(
      resources,
      { resultsPerCall: 10, maxQueryLength: 250, maxCalls: 5 },
      '/tools',
    );
    expect(ok).toBeDefined();
  });
});
