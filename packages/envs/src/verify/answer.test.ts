import { describe, expect, it } from 'vitest';
import { verifyAnswer } from './answer.ts';
import { normalizeAnswer } from './normalize.ts';

describe('normalizeAnswer', () => {
  it.each([
    ['The Mom Test', 'mom test'],
    ['  The   MOM test! ', 'mom test'],
    ['Café', 'cafe'],
    ['an apple, a pear', 'apple pear'],
    ['5,000', '5000'],
    ['5.0', '5'],
    ['05', '5'],
    ['twenty-one', '21'],
    ['Five', '5'],
    ['3.14', '3.14'],
  ])('%s -> %s', (input, expected) => {
    expect(normalizeAnswer(input)).toBe(expected);
  });
});

describe('verifyAnswer', () => {
  it('matches case, punctuation, articles, whitespace and numbers', () => {
    expect(verifyAnswer('the mom test.', { answer: 'The Mom Test' })).toBe(true);
    expect(verifyAnswer('five', { answer: '5' })).toBe(true);
    expect(verifyAnswer('March 2005', { answer: 'march, 2005' })).toBe(true);
  });

  it('accepts aliases', () => {
    const key = { answer: 'Y Combinator', aliases: ['YC'] };
    expect(verifyAnswer('yc', key)).toBe(true);
    expect(verifyAnswer('Combinator', key)).toBe(false);
  });

  it('is exact: no partial or empty matches', () => {
    expect(verifyAnswer('Oru or Pel', { answer: 'Oru' })).toBe(false);
    expect(verifyAnswer('6', { answer: '5' })).toBe(false);
    expect(verifyAnswer('the', { answer: 'The' })).toBe(false); // both normalise to ''
    expect(verifyAnswer(null, { answer: 'x' })).toBe(false);
  });
});
