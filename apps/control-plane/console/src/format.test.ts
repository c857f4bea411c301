// How numbers and times read on the pages.
import { describe, expect, it } from 'vitest';
import { ago, fleetShareText, num, span, when } from './format.ts';

describe('num', () => {
  it('shows a dash for a missing value and NaN, 0 as 0', () => {
    expect([num(null), num(undefined), num(Number.NaN), num(0), num(-0)]).toEqual([
      '–',
      '–',
      '–',
      '0',
      '0',
    ]);
  });

  it('keeps integers whole and rounds fractions to 3 significant digits', () => {
    expect([num(42), num(-7), num(999_999)]).toEqual(['42', '-7', '999999']);
    expect([num(0.123456), num(3.14159), num(-12.345), num(0.001)]).toEqual([
      '0.123',
      '3.14',
      '-12.3',
      '0.001',
    ]);
  });

  it('writes tiny and huge magnitudes in exponent form', () => {
    expect([num(4.3e-13), num(0.000999), num(1e6), num(-2.5e9)]).toEqual([
      '4.30e-13',
      '9.99e-4',
      '1.00e+6',
      '-2.50e+9',
    ]);
  });
});

describe('when', () => {
  it('is the local date and time, zero-padded', () => {
    const iso = new Date(2026, 0, 2, 3, 4, 5).toISOString();
    expect(when(iso)).toBe('2026-01-02 03:04:05');
    expect(when(undefined)).toBe('–');
  });
});

describe('ago', () => {
  const now = Date.parse('2026-12-05T12:00:00Z');
  const before = (seconds: number) => new Date(now - seconds * 1000).toISOString();

  it('picks seconds, minutes, hours or days', () => {
    expect(
      [before(0), before(59), before(60), before(59 * 60), before(3600)].map((t) => ago(t, now)),
    ).toEqual(['0 s ago', '59 s ago', '1 min ago', '59 min ago', '1 h ago']);
    expect([
      ago(before(23 * 3600), now),
      ago(before(86_400), now),
      ago(before(3 * 86_400), now),
    ]).toEqual(['23 h ago', '1 d ago', '3 d ago']);
  });

  it('never says a time is in the future (clock skew reads as 0 s), nothing for no time', () => {
    expect(ago(before(-30), now)).toBe('0 s ago');
    expect(ago(undefined, now)).toBe('');
  });
});

describe('span', () => {
  const at = (seconds: number) => new Date(Date.UTC(2026, 11, 5) + seconds * 1000).toISOString();

  it('reads seconds, then minutes and seconds, then hours and minutes, zero-padded', () => {
    expect(span(at(0), at(42))).toBe('42 s');
    expect(span(at(0), at(65))).toBe('1 min 05 s');
    expect(span(at(0), at(3599))).toBe('59 min 59 s');
    expect(span(at(0), at(3600 + 5 * 60 + 59))).toBe('1 h 05 min');
    expect(span(at(0), at(26 * 3600))).toBe('26 h 00 min');
  });

  it('shows a dash without a start', () => {
    expect(span(undefined, at(1))).toBe('–');
  });
});

describe('fleetShareText', () => {
  it("reads a run's share of an endpoint as a percentage with its weight and wait", () => {
    const share = {
      weight: 3,
      requests: 2,
      tokens: 600,
      tokenShare: 600 / 700,
      waitedSeconds: 0.2,
    };
    expect(fleetShareText(share)).toBe(
      '85.7 % of the tokens (weight 3; 2 requests, 600 tokens, waited 0.2 s)',
    );
  });
});
