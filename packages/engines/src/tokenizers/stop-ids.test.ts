// vLLM adds generation_config.json's eos_token_id list to every request's stop set
// (vllm-project/vllm vllm/sampling_params.py@db573835d3ef40643442e0817059e087355cf458
// `update_from_generation_config`), besides the tokenizer's eos. Qwen3's generation_config.json
// (Qwen/Qwen3-8B on the Hub) lists [151645 <|im_end|>, 151643 <|endoftext|>].
import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { QWEN3_TOKENIZER_CONFIG, QWEN3_TOKENIZER_JSON } from '../../test/tokenizers/qwen3.ts';
import { TokenizerConfigError } from './hf-config.ts';
import { loadHfTokenizer } from './hf-bpe.ts';
import { readModelStopIds } from './stop-ids.ts';

const tokenizer = loadHfTokenizer(QWEN3_TOKENIZER_JSON, { eosToken: '<|im_end|>' });
const IM_END = tokenizer.specialTokenId('<|im_end|>');
const END_OF_TEXT = tokenizer.specialTokenId('<|endoftext|>');

function modelDir(generation?: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), 'anneal-stops-'));
  copyFileSync(QWEN3_TOKENIZER_CONFIG, join(dir, 'tokenizer_config.json'));
  if (generation !== undefined) {
    writeFileSync(join(dir, 'generation_config.json'), JSON.stringify(generation));
  }
  return dir;
}

describe('readModelStopIds', () => {
  it("reads the tokenizer's eos and generation_config.json's eos list (Qwen3)", () => {
    expect([IM_END, END_OF_TEXT]).toEqual([151645, 151643]);
    const dir = modelDir({ bos_token_id: 151643, eos_token_id: [151645, 151643], top_k: 20 });
    expect(readModelStopIds(dir, tokenizer)).toEqual([151645, 151643]);
  });

  it('takes a single id, and the eos alone without generation_config.json', () => {
    expect(readModelStopIds(modelDir({ eos_token_id: 151643 }), tokenizer)).toEqual([
      151645, 151643,
    ]);
    expect(readModelStopIds(modelDir(), tokenizer)).toEqual([151645]);
    expect(readModelStopIds(mkdtempSync(join(tmpdir(), 'anneal-empty-')), tokenizer)).toEqual([]);
  });

  it('names the file and field of an id that is not a token', () => {
    const dir = modelDir({ eos_token_id: [151645, 'x'] });
    expect(() => readModelStopIds(dir, tokenizer)).toThrow(TokenizerConfigError);
    expect(() => readModelStopIds(dir, tokenizer)).toThrow(
      /generation_config\.json eos_token_id: "x" is not a token id/,
    );
  });
});
