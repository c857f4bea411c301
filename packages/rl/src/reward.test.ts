import { describe, expect, it } from 'vitest';
import { compositeReward, compositeRewards } from './composite-reward.ts';
import { efficiencyPenalties, efficiencyPenalty } from './efficiency-penalty.ts';
import { scoreGroup, type RewardConfig } from './group-reward.ts';

// The fixtures' config (β_lose = 0 keeps the hand computation short).
const FIXTURE_CONFIG: RewardConfig = {
  alphaWin: 1,
  alphaLose: 1,
  betaLose: 0,
  lambdaTool: 0.1,
  lambdaLen: 0.1,
  gate: true,
  normalizeStd: false,
};
import { createRng } from './rng.ts';

describe('efficiencyPenalty (docs/recipe.md §4)', () => {
  it.each([
    { tool: 0.5, len: 0.25, lambdaTool: 0.1, lambdaLen: 0.2, expected: 0.1 },
    { tool: 1, len: 1, lambdaTool: 0, lambdaLen: 0, expected: 0 },
    { tool: 0, len: 1, lambdaTool: 0.3, lambdaLen: 0.5, expected: 0.5 },
  ])(
    'λ_tool $lambdaTool · $tool + λ_len $lambdaLen · $len = $expected',
    ({ tool, len, lambdaTool, lambdaLen, expected }) => {
      expect(efficiencyPenalty(tool, len, lambdaTool, lambdaLen)).toBeCloseTo(expected, 12);
      expect(efficiencyPenalties([tool], [len], lambdaTool, lambdaLen)[0]).toBeCloseTo(
        expected,
        12,
      );
    },
  );
});

describe('compositeReward (docs/recipe.md §4)', () => {
  it.each([
    {
      name: 'correct, gated',
      baseReward: 1,
      preferenceScore: 0.8,
      efficiencyPenalty: 0.1,
      gate: true,
      expected: 0.7,
    },
    {
      name: 'wrong answer earns no preference credit',
      baseReward: 0,
      preferenceScore: 0.9,
      efficiencyPenalty: 0.1,
      gate: true,
      expected: -0.1,
    },
    {
      name: 'ungated linear sum lets preference compensate',
      baseReward: 0,
      preferenceScore: 0.9,
      efficiencyPenalty: 0.1,
      gate: false,
      expected: 0.8,
    },
    {
      name: 'correct, ungated',
      baseReward: 1,
      preferenceScore: 0.5,
      efficiencyPenalty: 0,
      gate: false,
      expected: 1.5,
    },
  ])('$name', ({ baseReward, preferenceScore, efficiencyPenalty, gate, expected }) => {
    expect(compositeReward(baseReward, preferenceScore, efficiencyPenalty, gate)).toBeCloseTo(
      expected,
      12,
    );
    expect(
      compositeRewards([baseReward], [preferenceScore], [efficiencyPenalty], gate)[0],
    ).toBeCloseTo(expected, 12);
  });
});

describe('scoreGroup (docs/recipe.md §4 → §2) with the default config', () => {
  // c̃ = [2, 2, 3, 1]; winners {0, 1} both 2 → b_g = 2 whatever the seed; Δ = [0, 0, 1, 0].
  // Ŵ = {0} (s_1 = 0.4 < 0.5); b_win = 100; b_lose = (200 + 100 + 50) / 3; cap 200.
  const outcomes = {
    baseReward: [1, 1, 0, 0],
    preferenceScore: [0.8, 0.4, 0.6, 0.2],
    toolCalls: [2, 2, 4, 1],
    toolErrors: [0, 0, 1, 0],
    length: [150, 90, 50, 250],
    refLength: [100, 200, 100, 50],
  };
  const expected = {
    toolPenalty: [0, 0, 0.6321205588285577, 0],
    lengthPenalty: [0.3934693402873666, 0.25643292079409363, 0.7364028618842733, 1],
    efficiencyPenalty: [0.03934693402873666, 0.025643292079409366, 0.1368523420712831, 0.1],
    reward: [0.7606530659712634, 0.37435670792059067, -0.1368523420712831, -0.1],
    advantage: [0.5361137080161206, 0.1498173499654479, -0.36139170002642584, -0.32453935795514277],
  };

  it.each([1, 2, 99])('hand-computed values (seed %i)', (seed) => {
    const score = scoreGroup(outcomes, FIXTURE_CONFIG, createRng(seed));
    expect(score.toolBaseline).toBe(2);
    expect(score.zeroVariance).toBe(false);
    for (const [key, values] of Object.entries(expected)) {
      values.forEach((value, i) =>
        expect(score[key as keyof typeof expected][i]).toBeCloseTo(value, 12),
      );
    }
  });

  it('normalizeStd divides by std + 1e-6', () => {
    const score = scoreGroup(outcomes, { ...FIXTURE_CONFIG, normalizeStd: true }, createRng(1));
    [1.4513487733529287, 0.4055804278983313, -0.9783473033625754, -0.8785818978886849].forEach(
      (value, i) => expect(score.advantage[i]).toBeCloseTo(value, 9),
    );
  });

  it('a group whose rewards tie has zero advantage and is flagged', () => {
    const tied = {
      baseReward: [0, 0],
      preferenceScore: [0.3, 0.9],
      toolCalls: [0, 0],
      toolErrors: [0, 0],
      length: [10, 10],
      refLength: [10, 10],
    };
    const score = scoreGroup(tied, FIXTURE_CONFIG, createRng(1));
    expect(score.zeroVariance).toBe(true);
    expect(Array.from(score.advantage)).toEqual([0, 0]);
    expect(score.toolBaseline).toBeNull();
  });
});
