import { NO_USAGE } from '@anneal/protocol';
import { describe, expect, it } from 'vitest';
import { formatQuantities } from './usage.ts';

describe('formatQuantities', () => {
  it('names judge calls and scored tokens when the run spent any', () => {
    expect(formatQuantities({ ...NO_USAGE, judgeCalls: 16, scoredTokens: 9_200 })).toBe(
      '0 prompt · 0 completion · 0 trained tokens · 0 tool calls · 16 judge calls · 9.2k scored tokens · 0s slot',
    );
    expect(formatQuantities(NO_USAGE)).toBe(
      '0 prompt · 0 completion · 0 trained tokens · 0 tool calls · 0s slot',
    );
  });
});
