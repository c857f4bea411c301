import { describe, expect, it } from 'vitest';
import { ByteTokenizer } from './tokenizer.ts';

describe('ByteTokenizer', () => {
  const tok = new ByteTokenizer();

  it('maps markers to single special ids and bytes to 0..255', () => {
    const ids = tok.encode('<|call|>héllo<|/call|>');
    expect(ids[0]).toBe(tok.specialTokenId('<|call|>'));
    expect(ids.at(-1)).toBe(tok.specialTokenId('<|/call|>'));
    expect(ids.slice(1, -1)).toEqual([...new TextEncoder().encode('héllo')]);
  });

  it('round-trips text with markers', () => {
    const text = '<|user|>who wrote it?<|assistant|><|answer|>Rob<|eos|>';
    expect(tok.decode(tok.encode(text))).toBe(text);
  });

  it('rejects ids outside the vocabulary', () => {
    expect(() => tok.decode([tok.vocabSize])).toThrow(/outside the vocabulary/);
    expect(tok.specialTokenId('<|nope|>')).toBeUndefined();
  });
});
