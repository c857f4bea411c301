// Per-model prices of an eval spec (docs/evaluation.md "Prices per model"): accepted on each
// `models` entry, left partial (no defaults, so omitted fields fall back to the spec table), and
// refused with the offending field's path.
import { describe, expect, it } from 'vitest';
import { parseRunSpec } from './index.ts';

const SPEC = (models: string) => `kind: eval
models: ${models}
prices: {promptPerMillionTokens: 0.5, completionPerMillionTokens: 1.5, perToolCall: 0.005}`;

describe('eval models[i].prices', () => {
  it('keeps a model’s own prices as given, without filling the omitted fields', () => {
    const result = parseRunSpec(SPEC('[{base: tiny}, {base: tiny, prices: {perToolCall: 0}}]'));
    if (!result.ok) throw new Error(JSON.stringify(result.errors));
    if (result.value.kind !== 'eval') throw new Error('kind');
    expect(result.value.models).toEqual([
      { base: 'tiny' },
      { base: 'tiny', prices: { perToolCall: 0 } },
    ]);
    expect(result.value.prices.perToolCall).toBe(0.005);
  });

  it('names the bad field: a negative price, an unknown price, a price on a training kind', () => {
    const negative = parseRunSpec(SPEC('[{}, {prices: {completionPerMillionTokens: -1}}]'));
    expect(negative.ok).toBe(false);
    if (negative.ok) return;
    expect(negative.errors.map((e) => e.path)).toEqual([
      '/models/1/prices/completionPerMillionTokens',
    ]);
    expect(negative.errors[0]!.message).toMatch(/greater or equal to 0/);

    const unknown = parseRunSpec(SPEC('[{prices: {perCall: 1}}]'));
    expect(unknown.ok).toBe(false);
    if (unknown.ok) return;
    expect(unknown.errors.map((e) => `${e.path}: ${e.message}`).join('\n')).toMatch(
      /\/models\/0\/prices.*perCall/,
    );

    // ModelRef is shared with the training kinds; only eval targets take prices
    const sft = parseRunSpec('kind: sft\nmodel: {base: tiny, prices: {perToolCall: 1}}');
    expect(sft.ok).toBe(false);
    if (sft.ok) return;
    expect(sft.errors.map((e) => `${e.path}: ${e.message}`).join('\n')).toMatch(/\/model.*prices/);
  });
});
