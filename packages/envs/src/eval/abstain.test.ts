import { describe, expect, it } from 'vitest';
import { isAbstention } from './abstain.ts';

describe('isAbstention', () => {
  it('counts no answer and fixed "don\'t know" phrasings, whatever the case and punctuation', () => {
    expect(isAbstention(null)).toBe(true);
    expect(isAbstention('  ')).toBe(true);
    expect(isAbstention("I don't know.")).toBe(true);
    expect(isAbstention('UNKNOWN')).toBe(true);
    expect(isAbstention('Cannot be determined')).toBe(true);
  });

  it('does not count answers that merely contain such words', () => {
    expect(isAbstention('The Unknown Soldier')).toBe(false);
    expect(isAbstention('Paris')).toBe(false);
  });
});
