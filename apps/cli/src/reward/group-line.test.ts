import { describe, expect, it } from 'vitest';
import { parseGroupLine } from './group-line.ts';

const rollout = {
  baseReward: 1,
  preferenceScore: 0.5,
  toolCalls: 2,
  toolErrors: 1,
  length: 10,
  refLength: 12,
};
const line = (value: unknown) => JSON.stringify(value);

describe('parseGroupLine', () => {
  it('reads a valid group into columns and ignores extra keys', () => {
    const parsed = parseGroupLine(
      line({ group: 'g', rollouts: [rollout, { ...rollout, baseReward: 0, text: 'hi' }] }),
    );
    expect(parsed).toEqual({
      ok: true,
      value: {
        group: 'g',
        outcomes: {
          baseReward: [1, 0],
          preferenceScore: [0.5, 0.5],
          toolCalls: [2, 2],
          toolErrors: [1, 1],
          length: [10, 10],
          refLength: [12, 12],
        },
      },
    });
  });

  it('reads the old names `base` and `preference` (deprecated until 2027-06-30) as the new ones', () => {
    const { baseReward, preferenceScore, ...counts } = rollout;
    const old = { ...counts, base: baseReward, preference: preferenceScore };
    const parsed = parseGroupLine(line({ group: 'g', rollouts: [old, { ...old, base: 0 }] }));
    expect(parsed).toMatchObject({
      ok: true,
      value: { outcomes: { baseReward: [1, 0], preferenceScore: [0.5, 0.5] } },
    });
    // a bad value under an old name is reported under that name
    expect(parseGroupLine(line({ group: 'g', rollouts: [{ ...old, preference: 2 }] }))).toEqual({
      ok: false,
      problems: [{ field: 'rollouts[0].preference', problem: 'must be a number in [0, 1], got 2' }],
    });
  });

  it.each([
    {
      name: 'malformed JSON',
      text: '{"group":',
      problems: [{ field: '$', problem: expect.stringMatching(/^invalid JSON/) }],
    },
    {
      name: 'not an object',
      text: '[1]',
      problems: [{ field: '$', problem: 'must be a JSON object, got [1]' }],
    },
    {
      name: 'missing group and rollouts',
      text: '{}',
      problems: [
        { field: 'group', problem: 'missing' },
        { field: 'rollouts', problem: 'missing' },
      ],
    },
    {
      name: 'empty rollouts',
      text: line({ group: 'g', rollouts: [] }),
      problems: [{ field: 'rollouts', problem: 'must be a non-empty array, got []' }],
    },
    {
      name: 'mistyped and out-of-range fields',
      text: line({
        group: 'g',
        rollouts: [
          rollout,
          { ...rollout, baseReward: true, preferenceScore: 1.01, length: 2.5, refLength: '3' },
        ],
      }),
      problems: [
        { field: 'rollouts[1].baseReward', problem: 'must be 0 or 1, got true' },
        { field: 'rollouts[1].preferenceScore', problem: 'must be a number in [0, 1], got 1.01' },
        { field: 'rollouts[1].length', problem: 'must be an integer in [0, 2147483647], got 2.5' },
        {
          field: 'rollouts[1].refLength',
          problem: 'must be an integer in [0, 2147483647], got "3"',
        },
      ],
    },
    {
      name: 'negative counts and toolErrors > toolCalls',
      text: line({
        group: 'g',
        rollouts: [
          { ...rollout, toolCalls: -1 },
          { ...rollout, toolCalls: 1, toolErrors: 2 },
        ],
      }),
      problems: [
        {
          field: 'rollouts[0].toolCalls',
          problem: 'must be an integer in [0, 2147483647], got -1',
        },
        { field: 'rollouts[1].toolErrors', problem: 'exceeds toolCalls (2 > 1)' },
      ],
    },
    {
      name: 'a rollout that is not an object, a missing field',
      text: line({ group: 'g', rollouts: [null, { ...rollout, preferenceScore: undefined }] }),
      problems: [
        { field: 'rollouts[0]', problem: 'must be an object, got null' },
        { field: 'rollouts[1].preferenceScore', problem: 'missing' },
      ],
    },
  ])('$name', ({ text, problems }) => {
    expect(parseGroupLine(text)).toEqual({ ok: false, problems });
  });
});
