import { DEFAULT_REWARD_CONFIG } from '@anneal/rl';
import { describe, expect, it } from 'vitest';
import { parseRewardConfig } from './config.ts';

describe('parseRewardConfig', () => {
  it('fills omitted keys with the documented defaults', () => {
    expect(parseRewardConfig('{}')).toEqual({ ok: true, config: DEFAULT_REWARD_CONFIG });
    expect(parseRewardConfig('{"lambdaLen": 0.3, "gate": false}')).toEqual({
      ok: true,
      config: { ...DEFAULT_REWARD_CONFIG, lambdaLen: 0.3, gate: false },
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
