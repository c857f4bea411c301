import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BYTE_ENCODER, toJsRegExp } from './byte-level.ts';
import { TokenizerConfigError, hfTokenizerFromJson, loadHfTokenizer } from './hf-bpe.ts';
import {
  FIXTURE_ADDED,
  QWEN2_SPLIT_REGEX,
  fixtureTokenizerJson,
} from '../../test/tokenizers/fixture.ts';

const tokenizer = hfTokenizerFromJson(fixtureTokenizerJson(), { eosToken: '<|endoftext|>' });
const build = (overrides: Record<string, unknown>) =>
  hfTokenizerFromJson(fixtureTokenizerJson(overrides), { eosToken: '<|endoftext|>' });
const withModel = (patch: Record<string, unknown>) =>
  build({ model: { ...(fixtureTokenizerJson()['model'] as object), ...patch } });

describe('byte-level map', () => {
  it('follows the GPT-2 convention (space is Ġ, newline Ċ, printable bytes map to themselves)', () => {
    expect(BYTE_ENCODER[32]).toBe('Ġ');
    expect(BYTE_ENCODER[10]).toBe('Ċ');
    expect(BYTE_ENCODER[0x41]).toBe('A');
    expect(BYTE_ENCODER[0xc3]).toBe('Ã');
    expect(new Set(BYTE_ENCODER).size).toBe(256);
  });

  it('translates the Qwen2 split regex, (?i:…) contractions included', () => {
    const regex = toJsRegExp(QWEN2_SPLIT_REGEX, 'test');
    expect("I'M fine, 42!\n\n".match(regex)).toEqual([
      'I',
      "'M",
      ' fine',
      ',',
      ' ',
      '4',
      '2',
      '!\n\n',
    ]);
  });
});

describe('HfBpeTokenizer encode', () => {
  it('merges by rank: "h e" before "e l", then "l l", then "he ll"', () => {
    expect(tokenizer.encode('hello')).toEqual([261, 111]);
  });

  it('merges a leading space (Ġ) into words and never across pre-tokens', () => {
    expect(tokenizer.encode('the')).toEqual([116, 257]);
    expect(tokenizer.encode(' the')).toEqual([258]);
    expect(tokenizer.encode('the hello')).toEqual([116, 257, 32, 261, 111]);
    // "a  b" pre-tokenizes to "a", " ", " b": the 'Ġ Ġ' merge cannot apply
    expect(tokenizer.encode('a  b')).toEqual([97, 32, 32, 98]);
    // trailing "   " is one pre-token: 'Ġ Ġ' merges leftmost first
    expect(tokenizer.encode('a   ')).toEqual([97, 263, 32]);
  });

  it('splits contractions case-insensitively before merging', () => {
    // pieces "I", "'M", "X"; a wrong split "'MX" would give [39, 264]
    expect(tokenizer.encode("I'MX")).toEqual([73, 265, 88]);
  });

  it('splits added tokens out as whole strings first', () => {
    expect(tokenizer.encode('<|im_start|>the<|im_end|>')).toEqual([301, 116, 257, 302]);
    expect(tokenizer.encode('<tool_call>hello</tool_call>')).toEqual([303, 261, 111, 304]);
    // an incomplete marker is ordinary text
    expect(tokenizer.encode('<|im_end')).toEqual(Array.from(Buffer.from('<|im_end')));
  });

  it('encodes multi-byte UTF-8 through byte-level characters', () => {
    expect(tokenizer.encode('é')).toEqual([262]);
    expect(tokenizer.encode('café')).toEqual([99, 97, 102, 262]);
    expect(tokenizer.encode('😀')).toEqual([0xf0, 0x9f, 0x98, 0x80]);
  });

  it('applies an NFC normalizer when configured', () => {
    const nfc = build({ normalizer: { type: 'NFC' } });
    expect(nfc.encode('e\u0301')).toEqual([262]);
    expect(tokenizer.encode('e\u0301')).toEqual([101, 0xcc, 0x81]);
  });

  it('supports the GPT-2 ByteLevel pre-tokenizer (use_regex) alone', () => {
    const gpt2 = build({ pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false } });
    expect(gpt2.encode('the hello')).toEqual([116, 257, 32, 261, 111]);
    expect(gpt2.encode(' 42')).toEqual([32, 52, 50]);
  });

  it('reports eos, vocab size and special token ids', () => {
    expect(tokenizer.eosTokenId).toBe(300);
    expect(tokenizer.vocabSize).toBe(300 + FIXTURE_ADDED.length);
    expect(tokenizer.specialTokenId('<tool_call>')).toBe(303);
    expect(tokenizer.specialTokenId('hello')).toBeUndefined();
    const imEnd = hfTokenizerFromJson(fixtureTokenizerJson(), { eosToken: '<|im_end|>' });
    expect(imEnd.eosTokenId).toBe(302);
  });

  it('uses a whole-word vocab entry under model.ignore_merges', () => {
    const model = fixtureTokenizerJson()['model'] as { vocab: Record<string, number> };
    const vocab = { ...model.vocab, hello: 270 };
    expect(withModel({ vocab, ignore_merges: true }).encode('hello')).toEqual([270]);
    expect(withModel({ vocab }).encode('hello')).toEqual([261, 111]);
  });
});

describe('HfBpeTokenizer decode', () => {
  it('decodes added tokens verbatim and byte tokens as UTF-8', () => {
    expect(tokenizer.decode([301, 258, 32, 261, 111, 302])).toBe(
      '<|im_start|> the hello<|im_end|>',
    );
    expect(tokenizer.decode([99, 97, 102, 262])).toBe('café');
  });

  it('replaces a partial UTF-8 sequence with U+FFFD', () => {
    expect(tokenizer.decode([0xf0, 0x9f])).toBe('\uFFFD');
    expect(tokenizer.decode([0xf0, 0x9f, 300])).toBe('\uFFFD<|endoftext|>');
  });

  it('rejects ids outside the vocabulary', () => {
    expect(() => tokenizer.decode([299])).toThrow(/token id 299 is outside the vocabulary/);
  });

  it('round-trips any unicode string, added tokens included', () => {
    const text = fc
      .array(fc.oneof(fc.string({ unit: 'binary' }), fc.constantFrom(...FIXTURE_ADDED, ' ', '\n')))
      .map((parts) => parts.join(''));
    fc.assert(
      fc.property(text, (s) => tokenizer.decode(tokenizer.encode(s)) === s),
      { numRuns: 300 },
    );
  });
});

describe('unsupported tokenizer.json features', () => {
  it.each([
    [{ model: { type: 'WordPiece', vocab: {} } }, /model\.type: 'WordPiece' is not supported/],
    [{ model: { type: 'Unigram', vocab: [] } }, /model\.type: 'Unigram'/],
    [{ normalizer: { type: 'Lowercase' } }, /normalizer: 'Lowercase' is not supported/],
    [{ pre_tokenizer: { type: 'Whitespace' } }, /pre_tokenizer\.type: 'Whitespace'/],
    [{ pre_tokenizer: null }, /pre_tokenizer: a ByteLevel pre-tokenizer is required/],
    [
      { pre_tokenizer: { type: 'ByteLevel', add_prefix_space: true } },
      /pre_tokenizer\.add_prefix_space/,
    ],
    [
      {
        pre_tokenizer: {
          type: 'Sequence',
          pretokenizers: [
            { type: 'Split', pattern: { Regex: '\\s+' }, behavior: 'Removed' },
            { type: 'ByteLevel', use_regex: false },
          ],
        },
      },
      /pre_tokenizer\.pretokenizers\[0\]\.behavior: 'Removed'/,
    ],
    [{ decoder: { type: 'WordPiece' } }, /decoder\.type: 'WordPiece'/],
  ])('rejects %j', (overrides, message) => {
    expect(() => build(overrides)).toThrow(TokenizerConfigError);
    expect(() => build(overrides)).toThrow(message);
  });

  it('rejects byte_fallback, dropout and malformed merges', () => {
    expect(() => withModel({ byte_fallback: true })).toThrow(/model\.byte_fallback/);
    expect(() => withModel({ dropout: 0.1 })).toThrow(/model\.dropout/);
    expect(() => withModel({ merges: ['h e', 'oops'] })).toThrow(/model\.merges\[1\]/);
  });

  it('rejects an eos token the tokenizer does not have', () => {
    expect(() => hfTokenizerFromJson(fixtureTokenizerJson(), { eosToken: '<|eot_id|>' })).toThrow(
      /eosToken '<\|eot_id\|>' is not a token/,
    );
  });
});

describe('loadHfTokenizer', () => {
  it('loads a tokenizer.json from disk and names the file in errors', () => {
    const dir = mkdtempSync(join(tmpdir(), 'anneal-tok-'));
    const good = join(dir, 'tokenizer.json');
    writeFileSync(good, JSON.stringify(fixtureTokenizerJson()));
    expect(loadHfTokenizer(good, { eosToken: '<|im_end|>' }).encode(' the')).toEqual([258]);
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify(fixtureTokenizerJson({ normalizer: { type: 'NFKC' } })));
    expect(() => loadHfTokenizer(bad, { eosToken: '<|im_end|>' })).toThrow(
      `${bad}: tokenizer.json normalizer: 'NFKC' is not supported`,
    );
    expect(() => loadHfTokenizer(join(dir, 'missing.json'), { eosToken: 'x' })).toThrow(
      /cannot read tokenizer file .*missing\.json/,
    );
  });
});
