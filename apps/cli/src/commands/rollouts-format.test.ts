import { describe, expect, it } from 'vitest';
import type { ListedRollout } from '@anneal/protocol';
import { parseSortFlag } from './record-format.ts';
import { rolloutBlock, versusBlock } from './rollouts-format.ts';

const rollout = (over: Partial<ListedRollout> = {}): ListedRollout => ({
  id: '12-3-0',
  role: 'policy',
  step: 12,
  group: 3,
  index: 0,
  pairedWith: '12-3-r0',
  policyVersion: 11,
  promptId: 'qa-7f3a',
  source: 'nq',
  exampleId: 'q17',
  component: 'qa',
  prompt: { text: 'Which river flows\nthrough Vienna?' },
  turns: [
    {
      assistant: 'Let me search.',
      calls: [
        {
          name: 'search_web',
          arguments: { query: 'river Vienna' },
          status: 'ok',
          failed: false,
          resultCount: 3,
          result: 'The Danube flows through Vienna',
          resultChars: 31,
        },
      ],
    },
    {
      assistant: 'It is the Danube.',
      calls: [
        {
          name: 'search_web',
          arguments: { query: 'x' },
          status: 'error',
          failed: true,
          resultCount: 0,
          result: '',
          resultChars: 0,
          error: 'backend timed out',
        },
      ],
    },
  ],
  answer: 'Danube',
  finish: 'answer',
  truncated: false,
  lengths: { prompt: 14, generated: 40, response: 90, total: 104 },
  toolCalls: 2,
  toolErrors: 1,
  rewards: {
    baseReward: 1,
    preferenceScore: 0.8,
    toolPenalty: 0.1,
    lengthPenalty: 0.2,
    efficiencyPenalty: 0.05,
    reward: 0.75,
  },
  advantage: 0.5321,
  ratio: { mean: 1.0012, min: 0.97, max: 1.04, k3: 0.00031, generated: 40 },
  checks: null,
  ...over,
});

describe('rollout printing', () => {
  it('parses --sort with a leading - as descending', () => {
    expect(parseSortFlag('-reward')).toEqual({ sort: 'reward', order: 'desc' });
    expect(parseSortFlag('length')).toEqual({ sort: 'length', order: 'asc' });
  });

  it('prints the reward breakdown, advantage, ratios, turns and tool calls', () => {
    const text = rolloutBlock(rollout());
    expect(text).toContain(
      '── 12-3-0  step 12 · group 3 · policy #0 · policy v11 · prompt qa-7f3a',
    );
    expect(text).toContain(
      'R 0.750 = r_base 1 · s 0.800 − pen 0.050 (tool 0.100, len 0.200)   Â +0.532   ratio 1.0012 [0.9700, 1.0400] k3 3.10e-4',
    );
    expect(text).toContain('2 tool calls, 1 failed');
    expect(text).toContain('prompt (14 tok, nq/q17): Which river flows through Vienna?');
    expect(text).toContain(
      '  → search_web("river Vienna") 3 results: The Danube flows through Vienna',
    );
    expect(text).toContain('  → search_web("x") error: backend timed out');
    expect(text).toContain('answer: Danube');
    const reference = rolloutBlock(
      rollout({
        role: 'reference',
        policyVersion: null,
        rewards: null,
        advantage: null,
        ratio: null,
      }),
    );
    expect(reference).toContain('reference model');
    expect(reference).toContain('not scored (reference rollout)');
  });

  it('never prints a control character of model output (an ESC would drive the terminal)', () => {
    const text = rolloutBlock(
      rollout({
        answer: 'Dan\u001b[2Jube\u009b',
        turns: [
          {
            assistant: 'x\u0007y',
            calls: [{ ...rollout().turns[0]!.calls[0]!, name: 'search\u009b' }],
          },
        ],
      }),
    );
    // Escaped visibly (ops/terminal-text.ts), not replaced: a reader sees what the model wrote.
    expect(text).toContain('answer: Dan\\x1b[2Jube\\x9b');
    expect(text).toContain('turn 1: x\\x07y');
    // eslint-disable-next-line no-control-regex
    expect(text.replace(/\n/g, '')).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
  });

  it('puts one prompt of two runs side by side, each side its answers, tools and mean R', () => {
    const left = [rollout(), rollout({ id: '12-3-1', answer: 'Rhine', rewards: null })];
    const right = [rollout({ id: '4-0-0', answer: 'the Danube', toolCalls: 0, turns: [] })];
    const text = versusBlock(
      'qa-7f3a',
      'Which river?',
      { run: 'run_A', rollouts: left },
      { run: 'run_B', rollouts: right },
      40,
    );
    const lines = text.split('\n');
    expect(lines[0]).toBe('══ prompt qa-7f3a: Which river?');
    expect(lines[1]).toMatch(
      /^run_A \(2 rollouts, mean R 0\.750\)\s+│ run_B \(1 rollouts, mean R 0\.750\)$/,
    );
    expect(lines[2]).toMatch(/^12-3-0 {2}R 0\.750 {2}Â \+0\.532 {2}answer\s+│ 4-0-0 {2}R 0\.750/);
    expect(lines[3]).toMatch(/^ {2}answer: Danube\s+│ {3}answer: the Danube$/);
    expect(lines[4]).toMatch(/^ {2}tools: search_web\("river Vienna"\) sea… │ {3}tools: \(none\)$/);
    expect(lines[5]).toMatch(/^12-3-1 {2}R - {2}/); // unscored: no R
    // wide enough, a failed call is marked
    const wide = versusBlock(
      'qa-7f3a',
      '',
      { run: 'a', rollouts: left },
      { run: 'b', rollouts: [] },
      80,
    );
    expect(wide).toContain('tools: search_web("river Vienna") search_web("x")!');
    expect(wide).toContain('(this prompt has no rollouts here)');
    expect(lines.every((l) => l.indexOf('│') <= 41)).toBe(true);
  });
});
