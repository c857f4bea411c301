import { describe, expect, it } from 'vitest';
import { detectLanguage } from './language.ts';
import { runCheck } from './programmatic.ts';
import { CITATION_MARKER_PATTERN } from './types.ts';
import { evaluateRubrics, MissingJudgeError, rubricsPass } from './evaluate.ts';

describe('detectLanguage', () => {
  it.each([
    ['The answer is yes, it is hot.', 'en'],
    ['Het antwoord is ja, het is warm.', 'nl'],
    ['Jawabannya adalah ya, itu panas dan kering.', 'id'],
    ['La réponse est oui, et il fait chaud.', 'fr'],
    ['답은 예입니다', 'ko'],
    ['答えははいです', 'ja'],
    ['答案是的', 'zh'],
    ['Ответ да', 'ru'],
    ['Oru', 'und'],
    ['42', 'und'],
  ])('%s -> %s', (text, language) => {
    expect(detectLanguage(text).language).toBe(language);
  });
});

describe('programmatic rubric checks (docs/recipe.md §3 examples)', () => {
  it('"contains the words lodging and boarding"', () => {
    const check = { type: 'contains_all', terms: ['lodging', 'boarding'] } as const;
    expect(runCheck(check, 'Lodging and boarding are included.')).toBe(true);
    expect(runCheck(check, 'Lodgings and boarding')).toBe(false); // whole words
  });

  it('"uses manpower as one word"', () => {
    expect(
      runCheck({ type: 'contains_none', terms: ['man power', 'man-power'] }, 'more manpower'),
    ).toBe(true);
    expect(runCheck({ type: 'contains_none', terms: ['man power'] }, 'more man power')).toBe(false);
  });

  it('"contains neither u, Plz nor &": words as words, symbols anywhere', () => {
    const check = { type: 'contains_none', terms: ['u', 'Plz', '&'] } as const;
    expect(runCheck(check, 'Thank you, please wait.')).toBe(true); // the letter u inside words is fine
    expect(runCheck(check, 'thank u')).toBe(false);
    expect(runCheck(check, 'plz wait')).toBe(false);
    expect(runCheck(check, 'salt&pepper')).toBe(false);
    expect(runCheck({ ...check, caseSensitive: true }, 'plz wait')).toBe(true);
  });

  it('"contains no citation markers of the form [type:idx]"', () => {
    const check = { type: 'regex', pattern: CITATION_MARKER_PATTERN, mustMatch: false } as const;
    expect(runCheck(check, 'YC launched in 2005.')).toBe(true);
    expect(runCheck(check, 'YC launched in 2005 [web:3].')).toBe(false);
    expect(runCheck(check, 'see [1]')).toBe(true);
  });

  it('language, contains_any and max_words', () => {
    expect(runCheck({ type: 'language', language: 'en' }, 'yes it is')).toBe(true);
    expect(runCheck({ type: 'language', language: 'en' }, 'ja het is')).toBe(false);
    expect(runCheck({ type: 'contains_any', terms: ['red', 'blue'] }, 'Blue!')).toBe(true);
    expect(runCheck({ type: 'max_words', max: 2 }, 'one two three')).toBe(false);
  });
});

describe('evaluateRubrics', () => {
  const rubrics = [
    { text: 'response is in English', check: { type: 'language', language: 'en' } as const },
    { text: 'is polite' },
  ];

  it('requires a judge for rubrics without a programmatic check', async () => {
    await expect(evaluateRubrics({ prompt: 'p', response: 'yes it is', rubrics })).rejects.toThrow(
      MissingJudgeError,
    );
    await expect(evaluateRubrics({ prompt: 'p', response: 'yes it is', rubrics })).rejects.toThrow(
      /"is polite" has no programmatic check/,
    );
  });

  it('skips the judge when a programmatic rubric already fails', async () => {
    expect(await rubricsPass({ prompt: 'p', response: 'ja het is', rubrics })).toBe(false);
  });
});
