import { describe, expect, it } from 'vitest';
import { safeJson, terminalLines, terminalSafe } from './terminal-text.ts';

// Every character a terminal acts on instead of showing (C0, DEL, C1, bidi overrides/isolates).
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

describe('terminal-safe text', () => {
  it('escapes OSC window titles, CSI clear screen, bell, C1 CSI and bidi overrides visibly', () => {
    expect(terminalSafe('\u001b]0;owned\u0007')).toBe('\\x1b]0;owned\\x07');
    expect(terminalSafe('a\u001b[2J\u001b[Hb')).toBe('a\\x1b[2J\\x1b[Hb');
    expect(terminalSafe('\u009b31m')).toBe('\\x9b31m');
    expect(terminalSafe('evil\u202etxt.exe')).toBe('evil\\u202etxt.exe');
    expect(terminalSafe('x\u2066y\u2069')).toBe('x\\u2066y\\u2069');
    expect(terminalSafe('line\nfake line\r')).toBe('line\\nfake line\\r');
    expect(terminalSafe('plain — ünïcode ✓ 中文')).toBe('plain — ünïcode ✓ 中文');
  });

  it('leaves no unsafe character for any code point below U+3000', () => {
    const all = Array.from({ length: 0x3000 }, (_, i) => String.fromCharCode(i)).join('');
    expect(terminalSafe(all)).not.toMatch(UNSAFE);
    expect(terminalLines(`a\u001b\nb\u202e`)).toBe('a\\x1b\nb\\u202e');
  });

  it('JSON stays the same data, with every unsafe character as a JSON escape', () => {
    const value = { reason: 'x\u001b]0;t\u0007\u009b\u202e\u2028\\\u202e', n: 1 };
    const text = safeJson(value, 2);
    expect(text.replaceAll('\n', '')).not.toMatch(UNSAFE);
    expect(text).not.toMatch(/\u2028/);
    expect(JSON.parse(text)).toEqual(value);
  });
});
