import { describe, expect, it } from 'vitest';
import { calibrateRubricPrompts } from './calibrate.ts';
import type { RubricPromptRow } from './schemas.ts';

describe('rubric pass@k calibration (docs/recipe.md §3)', () => {
  it('samples k responses per prompt, judges all rubrics and filters', async () => {
    const row = (prompt: string): RubricPromptRow => ({
      prompt,
      rubrics: [{ text: 'says yes', check: { type: 'contains_all', terms: ['yes'] } }],
    });
    const replies: Record<string, string[]> = {
      all: ['yes', 'yes', 'yes', 'yes'],
      none: ['no', 'no', 'no', 'no'],
      some: ['yes', 'no', 'yes', 'no'],
    };
    const seen: number[] = [];
    const results = await calibrateRubricPrompts([row('all'), row('none'), row('some')], {
      k: 4,
      concurrency: 2,
      sample: (r, k) => {
        seen.push(k);
        return Promise.resolve(replies[r.prompt] as string[]);
      },
    });
    expect(results.map((r) => [r.row.prompt, r.passes, r.kept])).toEqual([
      ['all', 4, false],
      ['none', 0, false],
      ['some', 2, true],
    ]);
    expect(seen).toEqual([4, 4, 4]);
  });

  it('fails loudly when the sampler returns the wrong count', async () => {
    await expect(
      calibrateRubricPrompts(
        [{ prompt: 'p', rubrics: [{ text: 't', check: { type: 'max_words', max: 3 } }] }],
        {
          k: 4,
          sample: () => Promise.resolve(['a']),
        },
      ),
    ).rejects.toThrow('prompt 1: sampler returned 1 responses, expected 4');
  });

  it('refuses free-text rubrics without a judge before sampling anything', async () => {
    let sampled = 0;
    const run = calibrateRubricPrompts([{ prompt: 'p', rubrics: [{ text: 'is polite' }] }], {
      k: 4,
      sample: () => {
        sampled++;
        return Promise.resolve(['a', 'b', 'c', 'd']);
      },
    });
    await expect(run).rejects.toThrow(/"is polite" has no programmatic check/);
    expect(sampled).toBe(0);
  });
});
