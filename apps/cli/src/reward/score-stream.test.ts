import type { RewardConfig } from '@anneal/rl';
import { describe, expect, it } from 'vitest';
import { REWARD_DEFAULTS } from './defaults.ts';
import { scoreGroupLines } from './score-stream.ts';

const group = (id: string) =>
  JSON.stringify({
    group: id,
    rollouts: [
      {
        baseReward: 1,
        preferenceScore: 0.9,
        toolCalls: 0,
        toolErrors: 0,
        length: 10,
        refLength: 10,
      },
      {
        baseReward: 1,
        preferenceScore: 0.9,
        toolCalls: 9,
        toolErrors: 0,
        length: 10,
        refLength: 10,
      },
      {
        baseReward: 0,
        preferenceScore: 0.1,
        toolCalls: 3,
        toolErrors: 3,
        length: 10,
        refLength: 10,
      },
    ],
  });

async function run(lines: string[], seed = 1, config: RewardConfig = REWARD_DEFAULTS) {
  const out: string[] = [];
  const err: string[] = [];
  const summary = await scoreGroupLines(lines, config, seed, {
    out: (l) => void out.push(l),
    err: (l) => void err.push(l),
  });
  return { out, err, summary };
}

describe('scoreGroupLines', () => {
  it('numbers lines from 1 counting blank lines, and tolerates a BOM on line 1', async () => {
    const { out, err, summary } = await run(['\uFEFF' + group('a'), '   ', '{', group('b')]);
    expect(err).toEqual([expect.stringMatching(/^line 3: \$: invalid JSON/)]);
    expect(out.map((l) => JSON.parse(l).group)).toEqual(['a', 'b']);
    expect(summary).toEqual({ scoredGroups: 2, badLines: 1 });
  });

  it("derives each group's b_g from (seed, group id) only", async () => {
    const alone = await run([group('b')]);
    const withOthers = await run([group('a'), 'junk', group('b')]);
    expect(withOthers.out[1]).toBe(alone.out[0]);
    const baselines = new Set<number>();
    for (const seed of [1, 2, 3, 4, 5, 6])
      baselines.add(JSON.parse((await run([group('b')], seed)).out[0]!).toolBaseline);
    expect(baselines.size).toBeGreaterThan(1);
  });

  it('a group the math refuses is reported as `line N: rollouts: <message>`, not thrown', async () => {
    // Validation keeps such input out of the CLI; a config the math rejects reaches the same catch.
    const bad = await run([group('a')], 1, { ...REWARD_DEFAULTS, alphaWin: -1 });
    expect(bad.out).toEqual([]);
    expect(bad.err).toEqual([expect.stringMatching(/^line 1: rollouts: .*alphaWin/)]);
    expect(bad.summary).toEqual({ scoredGroups: 0, badLines: 1 });
  });
});
