// A small hand-written Qwen2-style tokenizer.json for tests (no downloads): the 256 byte-level
// characters as ids 0..255 (id = byte value), a handful of merges, and added tokens.
import { BYTE_ENCODER } from '../../src/tokenizers/byte-level.ts';

/** The Qwen2 pre-tokenizer regex, verbatim from its tokenizer.json. */
export const QWEN2_SPLIT_REGEX =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/** Merges in rank order; merge k creates token id 256 + k. Both file forms are used. */
export const FIXTURE_MERGES: ReadonlyArray<string | [string, string]> = [
  'Ġ t', // 256 Ġt
  'h e', // 257 he
  ['Ġt', 'he'], // 258 Ġthe
  'l l', // 259 ll
  'e l', // 260 el (never wins in "hello": "h e" ranks first)
  ['he', 'll'], // 261 hell
  'Ã ©', // 262 é (UTF-8 C3 A9)
  'Ġ Ġ', // 263 two spaces
  'M X', // 264 MX
  "' M", // 265 'M
];

export const FIXTURE_ADDED = [
  '<|endoftext|>', // 300
  '<|im_start|>', // 301
  '<|im_end|>', // 302
  '<tool_call>', // 303
  '</tool_call>', // 304
  '<tool_response>', // 305
  '</tool_response>', // 306
  '<answer>', // 307
] as const;

/** Qwen-style tool-call markers, all added tokens of the fixture. */
export const FIXTURE_TOOL_MARKERS = {
  user: '<|im_start|>',
  assistant: '<|im_end|>',
  callStart: '<tool_call>',
  callEnd: '</tool_call>',
  resultStart: '<tool_response>',
  resultEnd: '</tool_response>',
  answer: '<answer>',
  eos: '<|endoftext|>',
} as const;

export function fixtureTokenizerJson(
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  const vocab: Record<string, number> = {};
  BYTE_ENCODER.forEach((char, byte) => (vocab[char] = byte));
  FIXTURE_MERGES.forEach((merge, k) => {
    const [left, right] = typeof merge === 'string' ? merge.split(' ') : merge;
    vocab[`${left}${right}`] = 256 + k;
  });
  return {
    version: '1.0',
    added_tokens: FIXTURE_ADDED.map((content, i) => ({
      id: 300 + i,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: null,
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        {
          type: 'Split',
          pattern: { Regex: QWEN2_SPLIT_REGEX },
          behavior: 'Isolated',
          invert: false,
        },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
      ],
    },
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: '',
      end_of_word_suffix: '',
      fuse_unk: false,
      byte_fallback: false,
      vocab,
      merges: FIXTURE_MERGES,
    },
    ...overrides,
  };
}
