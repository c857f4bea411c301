import type { RewardScorer } from '@anneal/engines';
import { SearchWebTool, type RolloutEnv } from '@anneal/envs';
import { describe, expect, it } from 'vitest';
import { ScriptedInference, format, rollout } from '../../../test/executors/fakes.ts';
import { ReferenceCache } from './reference-cache.ts';
import { baseReward, preferenceScores } from './rewards.ts';
import type { StepPrompt } from './sample-prompts.ts';

const qa: StepPrompt = {
  source: 'search-qa',
  example: {
    kind: 'qa',
    id: 'q1',
    prompt: 'Capital of X?',
    key: { answer: 'Paris', aliases: ['paris city'] },
  },
  tokens: format.encodePrompt('Capital of X?'),
};
const rubric: StepPrompt = {
  source: 'rubric-chat',
  example: {
    kind: 'rubric',
    id: 'r1',
    prompt: 'Say hello',
    rubrics: [{ text: 'contains hello', check: { type: 'contains_all', terms: ['hello'] } }],
  },
  tokens: format.encodePrompt('Say hello'),
};
const other: StepPrompt = {
  ...qa,
  example: { ...qa.example, id: 'q2', prompt: 'Capital of Y?' },
  tokens: format.encodePrompt('Capital of Y?'),
};
const answered = (answer: string | null) =>
  rollout(qa.tokens, [{ tokens: [97], generated: true }], { answer });

describe('baseReward (docs/recipe.md §4 r_base)', () => {
  it('verifies QA answers with aliases and needs a well-formed answer', async () => {
    expect(await baseReward(qa, answered('paris'))).toBe(1);
    expect(await baseReward(qa, answered('Paris City'))).toBe(1);
    expect(await baseReward(qa, answered('Lyon'))).toBe(0);
    expect(await baseReward(qa, answered(null))).toBe(0);
  });

  it('passes a rubric prompt only when every rubric passes', async () => {
    expect(await baseReward(rubric, answered('Hello there'))).toBe(1);
    expect(await baseReward(rubric, answered('Hi there'))).toBe(0);
  });
});

/** Scores a response by its length: s(x, y) = |y|. */
class LengthScorer implements RewardScorer {
  calls: number[] = [];
  score(pairs: ReadonlyArray<{ prompt: readonly number[]; response: readonly number[] }>) {
    this.calls.push(pairs.length);
    return Promise.resolve(Float32Array.from(pairs, (p) => p.response.length));
  }
  close() {
    return Promise.resolve();
  }
}

describe('preferenceScores (docs/recipe.md §5)', () => {
  const gen = (n: number) =>
    rollout(qa.tokens, [{ tokens: new Array<number>(n).fill(97), generated: true }]);

  it('is s = 1 for every rollout without a reward model', async () => {
    const s = await preferenceScores(
      undefined,
      [qa],
      [[gen(1), gen(2)]],
      [{ rollouts: [gen(1), gen(1)], sampledAt: 1 }],
    );
    expect(s).toEqual([[1, 1]]);
  });

  it('is P̄ = σ(s(x, y_i) − s(x, y_i^ref)) against the paired reference, reference scored once', async () => {
    const scorer = new LengthScorer();
    const ref = { rollouts: [gen(2), gen(5)], sampledAt: 1 };
    const s1 = await preferenceScores(scorer, [qa], [[gen(3), gen(3)]], [ref]);
    const sigma = (x: number) => 1 / (1 + Math.exp(-x));
    expect(s1[0]![0]).toBeCloseTo(sigma(1), 9);
    expect(s1[0]![1]).toBeCloseTo(sigma(-2), 9);
    await preferenceScores(scorer, [qa], [[gen(2), gen(2)]], [ref]);
    expect(scorer.calls).toEqual([4, 2]); // second step: only the policy rollouts
  });
});

describe('ReferenceCache', () => {
  const engine = new ScriptedInference((_, k) => `ref${k}`);
  const env: RolloutEnv = {
    engine,
    format,
    tool: new SearchWebTool({ name: 'none', search: () => Promise.resolve([]) }),
    config: { maxContextTokens: 256, maxResponseTokens: 32, temperature: 1, topP: 1, model: 'ref' },
  };

  it('generates G reference rollouts per prompt once and serves them from the cache', async () => {
    const cache = new ReferenceCache(env, 7, true);
    const first = await cache.forPrompts([qa, rubric], 2, 1);
    const second = await cache.forPrompts([qa], 2, 2);
    expect(first.map((g) => g.rollouts.map((r) => r.answer))).toEqual([
      ['ref0', 'ref1'],
      ['ref0', 'ref1'],
    ]);
    expect(second[0]).toBe(first[0]);
    expect(engine.requests.map((r) => r.model)).toEqual(['ref', 'ref']);
    expect(cache.stats()).toEqual({ hits: 1, misses: 2, evictions: 0, size: 2 });
  });

  it('holds at most maxGroups prompts, the least recently used leaving first', async () => {
    const cache = new ReferenceCache(env, 7, true, undefined, 2);
    const at = () => engine.requests.length;
    const before = at();
    const [qa1] = await cache.forPrompts([qa], 2, 1);
    const [rubric1] = await cache.forPrompts([rubric], 2, 2);
    await cache.forPrompts([qa], 2, 3); // qa used last: rubric is the least recently used
    expect(at() - before).toBe(2);
    const [other1] = await cache.forPrompts([other], 2, 4); // a third prompt: rubric leaves
    expect(cache.stats()).toEqual({ hits: 1, misses: 3, evictions: 1, size: 2 });
    const [qa2, other2] = await cache.forPrompts([qa, other], 2, 5);
    expect(qa2).toBe(qa1);
    expect(other2).toBe(other1);
    expect(at() - before).toBe(3);
    // rubric is generated again, with the seed it had: the same request
    const [rubric2] = await cache.forPrompts([rubric], 2, 6);
    expect(rubric2).not.toBe(rubric1);
    expect(at() - before).toBe(4);
    expect(engine.requests.at(-1)!.seed).toBe(engine.requests[before + 1]!.seed);
    expect(cache.stats()).toEqual({ hits: 3, misses: 4, evictions: 2, size: 2 });
  });

  it('refuses a bound that is not a positive integer', () => {
    expect(() => new ReferenceCache(env, 7, true, undefined, 0)).toThrow(/maxGroups/);
    expect(() => new ReferenceCache(env, 7, true, undefined, 1.5)).toThrow(/maxGroups/);
  });

  it('samples again every step when caching is off', async () => {
    const cache = new ReferenceCache(env, 7, false);
    const before = engine.requests.length;
    await cache.forPrompts([qa], 2, 1);
    await cache.forPrompts([qa], 2, 2);
    expect(engine.requests.length - before).toBe(2);
    expect(engine.requests.at(-1)!.seed).not.toBe(engine.requests.at(-2)!.seed);
  });
});
