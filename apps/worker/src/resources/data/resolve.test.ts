import { ByteTokenizer } from '@anneal/engines';
import { LocalCorpusBackend, resolveLimits } from '@anneal/envs';
import { EvalSpec, TOOL_LIMIT_CAPS, ToolLimits } from '@anneal/protocol';
import { describe, expect, it } from 'vitest';
import { RunSetupError } from '../../errors.ts';
import type { RunResources } from '../../executors/types.ts';
import { createSearchTool } from './resolve.ts';

const resources = {
  tokenizer: new ByteTokenizer(),
  search: new LocalCorpusBackend('docs', [{ id: 'a', title: 'A', text: 'alpha beta' }]),
} as unknown as RunResources;

const budgets = EvalSpec.properties.budgets;

describe('search_web limits', () => {
  it('the run-spec caps are exactly what the tool accepts (docs/recipe.md §6)', () => {
    // one definition (protocol TOOL_LIMIT_CAPS) for the grpo and eval schemas and the tool
    expect(ToolLimits.properties.resultsPerCall.maximum).toBe(TOOL_LIMIT_CAPS.resultsPerCall);
    expect(ToolLimits.properties.maxQueryLength.maximum).toBe(TOOL_LIMIT_CAPS.maxQueryLength);
    expect(ToolLimits.properties.maxCallsPerRollout.maximum).toBe(
      TOOL_LIMIT_CAPS.maxCallsPerRollout,
    );
    expect(budgets.properties.resultsPerCall.maximum).toBe(TOOL_LIMIT_CAPS.resultsPerCall);
    expect(budgets.properties.maxQueryLength.maximum).toBe(TOOL_LIMIT_CAPS.maxQueryLength);
    expect(budgets.properties.toolCallBudgets.items.maximum).toBe(
      TOOL_LIMIT_CAPS.maxCallsPerRollout,
    );
    expect(() => resolveLimits(TOOL_LIMIT_CAPS)).not.toThrow();
    for (const key of Object.keys(TOOL_LIMIT_CAPS) as (keyof typeof TOOL_LIMIT_CAPS)[]) {
      expect(() => resolveLimits({ [key]: TOOL_LIMIT_CAPS[key] + 1 })).toThrow(RangeError);
    }
  });

  it('limits the tool refuses are a setup error naming the field (never retried)', () => {
    const build = () =>
      createSearchTool(
        resources,
        { resultsPerCall: 10, maxQueryLength: 4096, maxCallsPerRollout: 5 },
        '/tools',
      );
    expect(build).toThrow(RunSetupError);
    expect(build).toThrow(/^\/tools: maxQueryLength: must be an integer in \[1, 250\], got 4096$/);
    const ok = createSearchTool(
      resources,
      { resultsPerCall: 10, maxQueryLength: 250, maxCallsPerRollout: 5 },
      '/tools',
    );
    expect(ok).toBeDefined();
  });
});
