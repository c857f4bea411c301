import { decodeTime } from 'ulid';
import { describe, expect, it } from 'vitest';
import { newRunId } from './ids.ts';

describe('newRunId', () => {
  it('is run_ + a ULID of the given time', () => {
    const id = newRunId(1_700_000_000_123);
    expect(id).toMatch(/^run_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(decodeTime(id.slice(4))).toBe(1_700_000_000_123);
  });

  it('sorts by creation time (the run index pages on it) and never repeats', () => {
    const times = [5, 1, 4, 2, 3].map((s) => 1_700_000_000_000 + s * 1000);
    const sorted = times.map((t) => newRunId(t)).sort();
    expect(sorted.map((id) => decodeTime(id.slice(4)))).toEqual([...times].sort());
    const same = Array.from({ length: 1000 }, () => newRunId(1_700_000_000_000));
    expect(new Set(same).size).toBe(1000);
  });

  it('draws every character of the alphabet in every random position (across pool refills)', () => {
    // 2000 ids use 32,000 random bytes: several refills of the 4 KiB pool.
    const ids = Array.from({ length: 2000 }, () => newRunId(1_700_000_000_000).slice(4));
    expect(new Set(ids).size).toBe(2000);
    for (let position = 10; position < 26; position++) {
      const seen = new Set(ids.map((id) => id[position]));
      expect([...seen].sort().join('')).toBe('0123456789ABCDEFGHJKMNPQRSTVWXYZ');
    }
  });
});
