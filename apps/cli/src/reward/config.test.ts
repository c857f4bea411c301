import { parseRunSpec } from '@anneal/protocol';
import { describe, expect, it } from 'vitest';
import { parseRewardConfig } from './config.ts';
import { REWARD_DEFAULTS } from './defaults.ts';

/** What a GRPO run that sets no reward keys uses: the run spec parsed with its defaults. */
function grpoRunDefaults() {
  const parsed = parseRunSpec('kind: grpo\n');
  if (!parsed.ok || parsed.value.kind !== 'grpo') throw new Error('grpo spec did not parse');
  const { reward, advantage } = parsed.value;
  return { ...reward, normalizeStd: advantage.normalizeStd };
}

describe('parseRewardConfig', () => {
  it('fills omitted keys with the defaults of a GRPO run (one source of truth)', () => {
    const runDefaults = grpoRunDefaults();
    expect(parseRewardConfig('{}')).toEqual({ ok: true, config: runDefaults });
    expect(REWARD_DEFAULTS).toEqual(runDefaults);
    // the values users see in --help and apps/cli/README.md
    expect(REWARD_DEFAULTS).toEqual({
      alphaWin: 1,
      alphaLose: 1,
      betaLose: 0.1,
      lambdaTool: 0.1,
      lambdaLen: 0.1,
      gate: true,
      normalizeStd: false,
    });
    expect(parseRewardConfig('{"lambdaLen": 0.3, "gate": false}')).toEqual({
      ok: true,
      config: { ...runDefaults, lambdaLen: 0.3, gate: false },
    });
  });

  it.each([
    { text: 'nope', field: '$', problem: /^invalid JSON/ },
    { text: '[]', field: '$', problem: /must be a JSON object/ },
    { text: '{"alphaWin": -0.1}', field: 'alphaWin', problem: /finite number >= 0, got -0.1/ },
    { text: '{"betaLose": "1"}', field: 'betaLose', problem: /got "1"/ },
    { text: '{"normalizeStd": 1}', field: 'normalizeStd', problem: /true or false/ },
    { text: '{"lamdaLen": 1}', field: 'lamdaLen', problem: /unknown key/ },
  ])('$text → $field', ({ text, field, problem }) => {
    const result = parseRewardConfig(text);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.problems).toHaveLength(1);
      expect(result.problems[0]!.field).toBe(field);
      expect(result.problems[0]!.problem).toMatch(problem);
    }
  });
});
