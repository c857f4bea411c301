// Spawns the real CLI (`node apps/cli/bin/anneal.js reward score ...`) on fixture files.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const repoRoot = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../..');
const dir = mkdtempSync(join(tmpdir(), 'anneal-reward-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function anneal(args: string[], stdin?: string): Promise<Run> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['apps/cli/bin/anneal.js', ...args], { cwd: repoRoot });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', fail);
    child.on('close', (code) => done({ code, stdout, stderr }));
    child.stdin.end(stdin ?? '');
  });
}

function fixture(name: string, content: string): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

const rollout = (
  base: number,
  preference: number,
  toolCalls: number,
  toolErrors: number,
  length: number,
  refLength: number,
) => ({
  base,
  preference,
  toolCalls,
  toolErrors,
  length,
  refLength,
});

// Hand-computed (docs/recipe.md §4, §2; config α_win = α_lose = 1, β_lose = 0, λ = 0.1):
// c̃ = [2, 2, 3, 1], winners {0, 1} both 2 → b_g = 2 for any seed; Δ = [0, 0, 1, 0].
// Ŵ = {0}; b_win = 100, b_lose = (200 + 100 + 50) / 3, cap = 200.
// pen_len = [1 − e^−0.5, 1 − e^−(350/270 − 1), 1 − e^−(350/150 − 1), 1 (hard cap)].
const handGroup = {
  group: 'hand',
  rollouts: [
    rollout(1, 0.8, 2, 0, 150, 100),
    rollout(1, 0.4, 2, 0, 90, 200),
    rollout(0, 0.6, 4, 1, 50, 100),
    rollout(0, 0.2, 1, 0, 250, 50),
  ],
};
const handExpected = [
  {
    toolPenalty: 0,
    lengthPenalty: 0.3934693402873666,
    efficiencyPenalty: 0.03934693402873666,
    reward: 0.7606530659712634,
    advantage: 0.5361137080161206,
  },
  {
    toolPenalty: 0,
    lengthPenalty: 0.25643292079409363,
    efficiencyPenalty: 0.025643292079409366,
    reward: 0.37435670792059067,
    advantage: 0.1498173499654479,
  },
  {
    toolPenalty: 0.6321205588285577,
    lengthPenalty: 0.7364028618842733,
    efficiencyPenalty: 0.1368523420712831,
    reward: -0.1368523420712831,
    advantage: -0.36139170002642584,
  },
  {
    toolPenalty: 0,
    lengthPenalty: 1,
    efficiencyPenalty: 0.1,
    reward: -0.1,
    advantage: -0.32453935795514277,
  },
];
// Winners' c̃ = [0, 9] → b_g ∈ {0, …, 5}: the seed matters here.
const wideGroup = {
  group: 'wide',
  rollouts: [
    rollout(1, 0.9, 0, 0, 10, 10),
    rollout(1, 0.9, 9, 0, 10, 10),
    rollout(0, 0.1, 3, 3, 10, 10),
  ],
};
const noWinners = {
  group: 'none',
  rollouts: [rollout(0, 0.7, 3, 1, 10, 20), rollout(0, 0.2, 1, 0, 30, 20)],
};

const jsonl = (...groups: unknown[]) =>
  groups.map((g) => (typeof g === 'string' ? g : JSON.stringify(g))).join('\n') + '\n';
const emptyConfig = fixture('empty.json', '{}');
const handConfig = fixture('hand.json', '{"betaLose": 0}'); // the rest: run-spec defaults

// Each test starts real node processes (tsx compiles the CLI on start-up): seconds each on a
// loaded machine, hence the generous per-test timeout.
describe('anneal reward score', { timeout: 120_000 }, () => {
  it('prints hand-computed values, b_g, and null b_g without winners', async () => {
    const input = fixture('hand.jsonl', jsonl(handGroup, noWinners));
    const run = await anneal([
      'reward',
      'score',
      '--config',
      handConfig,
      '--input',
      input,
      '--seed',
      '7',
    ]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const [hand, none, ...rest] = run.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rest).toEqual([]);
    expect(Object.keys(hand)).toEqual(['group', 'toolBaseline', 'rollouts']);
    expect(hand.group).toBe('hand');
    expect(hand.toolBaseline).toBe(2);
    handExpected.forEach((expected, i) => {
      expect(Object.keys(hand.rollouts[i])).toEqual(Object.keys(expected));
      for (const [key, value] of Object.entries(expected))
        expect(hand.rollouts[i][key]).toBeCloseTo(value, 12);
    });
    expect(none.toolBaseline).toBeNull();
    expect(none.rollouts.map((r: { toolPenalty: number }) => r.toolPenalty)).toEqual([0, 0]); // β_lose = 0, p = 0
    // with an empty config β_lose is the GRPO run spec's default, 0.1: every loser pays it
    const defaults = await anneal(['reward', 'score', '--config', emptyConfig, '--input', input]);
    expect(defaults.code).toBe(0);
    const noneWithDefaults = JSON.parse(defaults.stdout.trimEnd().split('\n')[1]!);
    expect(noneWithDefaults.rollouts.map((r: { toolPenalty: number }) => r.toolPenalty)).toEqual([
      0.1, 0.1,
    ]);
  });

  it('counts beyond 2^31 − 1 are bad lines (no crash); the valid lines before and after are written', async () => {
    const lines = [
      JSON.stringify(handGroup), // 1
      JSON.stringify({
        group: 'huge',
        rollouts: [rollout(1, 0.9, 0, 0, 10, 10), rollout(1, 0.9, 20_000_000_000, 0, 10, 10)],
      }), // 2: winners' toolCalls 0 and 2·10^10
      '{"group": "e300", "rollouts": [{"base": 1, "preference": 0.5, "toolCalls": 1e300, "toolErrors": 0, "length": 1, "refLength": 1}]}', // 3
      JSON.stringify({
        group: 'max',
        rollouts: [rollout(1, 0.9, 0, 0, 10, 10), rollout(1, 0.9, 2 ** 31 - 1, 0, 10, 10)],
      }), // 4: the largest accepted count still scores
      JSON.stringify(noWinners), // 5
    ];
    const input = fixture('huge.jsonl', lines.join('\n') + '\n');
    const run = await anneal(['reward', 'score', '--config', emptyConfig, '--input', input]);
    expect(run.code).toBe(2);
    expect(run.stderr.trimEnd().split('\n')).toEqual([
      'line 2: rollouts[1].toolCalls: must be an integer in [0, 2147483647], got 20000000000',
      'line 3: rollouts[0].toolCalls: must be an integer in [0, 2147483647], got 1e+300',
    ]);
    const groups = run.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(groups.map((g) => g.group)).toEqual(['hand', 'max', 'none']);
    expect(groups[1].toolBaseline).toBeGreaterThanOrEqual(0);
    expect(groups[1].toolBaseline).toBeLessThanOrEqual(2 ** 30);
  });

  it('a 100,000-deep JSON line is a bad line; the lines around it are still scored', async () => {
    const deep = 100_000;
    const lines = [
      JSON.stringify(handGroup), // 1
      `{"group": "deep", "rollouts": ${'['.repeat(deep)}${']'.repeat(deep)}}`, // 2
      `{"group": ${'['.repeat(deep)}${']'.repeat(deep)}, "rollouts": []}`, // 3
      `${'{"a":'.repeat(deep)}1${'}'.repeat(deep)}`, // 4
      JSON.stringify({ ...noWinners, group: '[[[[ in a string ]]]]' }), // 5: brackets in strings
    ];
    const input = fixture('deep.jsonl', lines.join('\n') + '\n');
    const run = await anneal(['reward', 'score', '--config', emptyConfig, '--input', input]);
    expect(run.stderr).not.toContain('call stack');
    expect(run.stderr.trimEnd().split('\n')).toEqual([
      'line 2: $: nested deeper than 32 levels',
      'line 3: $: nested deeper than 32 levels',
      'line 4: $: nested deeper than 32 levels',
    ]);
    expect(run.code).toBe(2);
    const groups = run.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l).group);
    expect(groups).toEqual(['hand', '[[[[ in a string ]]]]']);
  });

  it('same seed → identical output; --input - reads stdin', async () => {
    // (that other seeds move b_g is checked in-process: src/reward/score-stream.test.ts)
    const text = jsonl(wideGroup, handGroup);
    const input = fixture('wide.jsonl', text);
    const config = fixture('config.json', '{"betaLose": 0.2, "normalizeStd": true}');
    const args = ['reward', 'score', '--config', config, '--seed', '11'];
    const first = await anneal([...args, '--input', input]);
    const second = await anneal([...args, '--input', input]);
    const fromStdin = await anneal([...args, '--input', '-'], text);
    expect([first.code, second.code, fromStdin.code]).toEqual([0, 0, 0]);
    expect(first.stdout.trimEnd().split('\n')).toHaveLength(2);
    expect(second.stdout).toBe(first.stdout);
    expect(fromStdin.stdout).toBe(first.stdout);
    expect([0, 1, 2, 3, 4, 5]).toContain(JSON.parse(first.stdout.split('\n')[0]!).toolBaseline);
  });

  it('bad lines: reported as `line N: <field>: <problem>`, valid lines still scored, exit 2', async () => {
    const lines = [
      JSON.stringify(handGroup), // 1
      '{"group": "x", "rollouts": [', // 2 malformed JSON
      JSON.stringify({ rollouts: handGroup.rollouts }), // 3 missing group
      JSON.stringify({
        group: 'p',
        rollouts: [rollout(1, 0.5, 1, 0, 1, 1), rollout(0, 1.5, 1, 0, 1, 1)],
      }), // 4
      '', // 5 blank: skipped
      JSON.stringify({ group: 'n', rollouts: [rollout(1, 0.5, -2, 0, 1, 1)] }), // 6 negative count
      JSON.stringify({ group: 'e', rollouts: [rollout(1, 0.5, 1, 2, 1, 1)] }), // 7 toolErrors > toolCalls
      JSON.stringify({ group: 7, rollouts: [{ ...rollout(1, 0.5, 1, 0, 1, 1), length: 'long' }] }), // 8 mistyped
      JSON.stringify(wideGroup), // 9
    ];
    const input = fixture('bad.jsonl', lines.join('\n') + '\n');
    const run = await anneal(['reward', 'score', '--config', emptyConfig, '--input', input]);
    expect(run.code).toBe(2);
    expect(run.stderr.trimEnd().split('\n')).toEqual([
      expect.stringMatching(/^line 2: \$: invalid JSON \(.+\)$/),
      'line 3: group: missing',
      'line 4: rollouts[1].preference: must be a number in [0, 1], got 1.5',
      'line 6: rollouts[0].toolCalls: must be an integer in [0, 2147483647], got -2',
      'line 7: rollouts[0].toolErrors: exceeds toolCalls (2 > 1)',
      'line 8: group: must be a string, got 7',
      'line 8: rollouts[0].length: must be an integer in [0, 2147483647], got "long"',
    ]);
    const groups = run.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(groups.map((g) => g.group)).toEqual(['hand', 'wide']);
    // a group's output does not depend on the other lines: score 'wide' alone
    const alone = await anneal([
      'reward',
      'score',
      '--config',
      emptyConfig,
      '--input',
      fixture('alone.jsonl', jsonl(wideGroup)),
    ]);
    expect(alone.stdout.trimEnd()).toBe(run.stdout.trimEnd().split('\n')[1]);
  });

  it('bad config: every problem named, nothing scored, exit 2', async () => {
    const config = fixture('bad-config.json', '{"alphaWin": -1, "lamdaLen": 0.2, "gate": "yes"}');
    const run = await anneal([
      'reward',
      'score',
      '--config',
      config,
      '--input',
      fixture('one.jsonl', jsonl(handGroup)),
    ]);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(`${config}: alphaWin: must be a finite number >= 0, got -1`);
    expect(run.stderr).toContain(`${config}: lamdaLen: unknown key`);
    expect(run.stderr).toContain(`${config}: gate: must be true or false, got "yes"`);
  });

  it.each([
    {
      name: 'unknown flag',
      args: ['--input', 'x', '--config', 'y', '--frobnicate'],
      message: "unknown option '--frobnicate'",
    },
    {
      name: 'missing input file',
      args: ['--input', '/nonexistent/groups.jsonl', '--config', 'CONFIG'],
      message: "cannot read --input '/nonexistent/groups.jsonl'",
    },
    {
      name: 'input is a directory',
      args: ['--input', 'TMPDIR', '--config', 'CONFIG'],
      message: 'is a directory',
    },
    {
      name: 'missing config file',
      args: ['--input', 'x', '--config', '/nonexistent/reward.json'],
      message: "cannot read --config '/nonexistent/reward.json'",
    },
    {
      name: 'missing --config',
      args: ['--input', 'x'],
      message: "required option '--config <file>' not specified",
    },
    {
      name: 'non-integer seed',
      args: ['--input', 'x', '--config', 'CONFIG', '--seed', '1.5'],
      message: 'must be an integer',
    },
  ])('$name: usage message, exit 2', async ({ args, message }) => {
    const run = await anneal([
      'reward',
      'score',
      ...args.map((a) => (a === 'CONFIG' ? emptyConfig : a === 'TMPDIR' ? dir : a)),
    ]);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(message);
    expect(run.stderr).toContain('Usage: anneal reward score [options]');
  });

  it.each([[['reward', 'score', '--help']], [['reward', 'help', 'score']]])(
    'anneal %s documents the defaults and exits 0',
    async (args) => {
      const run = await anneal(args);
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(
        /alphaWin\s+1\n\s+alphaLose\s+1\n\s+betaLose\s+0\.1\n\s+lambdaTool\s+0\.1\n\s+lambdaLen\s+0\.1\n\s+gate\s+true\n\s+normalizeStd\s+false/,
      );
    },
  );
});
