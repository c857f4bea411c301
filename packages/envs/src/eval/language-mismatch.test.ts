import { describe, expect, it } from 'vitest';
import { languageMismatch } from './language-mismatch.ts';

describe('languageMismatch', () => {
  const question = 'Which town is the river of the capital in?';
  it('flags an answer in another language than the question', () => {
    expect(languageMismatch(question, 'Die Stadt ist nicht in der Nähe und das ist es')).toBe(true);
    expect(languageMismatch(question, 'Это город')).toBe(true);
  });

  it('does not flag same-language, undetermined (a name) or missing answers', () => {
    expect(languageMismatch(question, 'It is the town of Oru, on the river')).toBe(false);
    expect(languageMismatch(question, 'Oru')).toBe(false);
    expect(languageMismatch(question, null)).toBe(false);
  });

  it('uses the declared language over the detected one', () => {
    expect(languageMismatch('Oru?', 'It is the town of Oru, on the river', 'de')).toBe(true);
  });
});
