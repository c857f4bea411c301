// What a model writes, for the benchmarks' fake sampler: English prose about a search result, as
// Qwen3's tokenizer encodes it. A real rollout's ids repeat the way text does (common words,
// spaces, punctuation) and decode to valid UTF-8, which the fake's arithmetic ids (nearly every
// token different, many of them byte fragments) do not: decoding, the ledger's gzip and the
// JSON replies all cost what they cost on real output.
import { loadHfTokenizer } from '@anneal/engines';
import { QWEN3_TOKENIZER_JSON } from '@anneal/engines/testing';

export const PARAGRAPH =
  'The search results mention that the bridge was completed in 1932 after six years of ' +
  'construction, and that its main span is 503 metres long. Another source gives the opening ' +
  'date as 19 March 1932. I should check whether the question asks for the year of completion ' +
  'or the year construction began, then answer with the year only. ';

/** PARAGRAPH eight times over, as Qwen3 token ids. */
export function modelTextIds(): number[] {
  const tokenizer = loadHfTokenizer(QWEN3_TOKENIZER_JSON, { eosToken: '<|endoftext|>' });
  return tokenizer.encode(PARAGRAPH.repeat(8));
}
