// What a model writes, for the benchmarks' fake sampler: prose-like token ids as Qwen3's
// tokenizer has them. A real rollout's ids repeat the way text does (common words often, rare
// ones seldom) and decode to valid UTF-8, which the fake's arithmetic ids (nearly every token
// different, many of them byte fragments) do not; and real prose compresses 2–3× under the
// ledger's gzip, which one paragraph repeated (this module's text until 2026-12-06: 90×) does
// not (the ledger now uses Brotli, which compresses it about as much). So the text is drawn,
// seeded: most words from a list of common English words by a Zipf law over their rank, the
// rest uniformly from Qwen3's longer whole-word tokens, in
// sentences with commas, full stops, a few numbers and paragraph breaks. Decoding, the ledger's
// gzip and the JSON replies then cost what they cost on real output; `textStats` says how close.
import { gzipSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import { loadHfTokenizer } from '@anneal/engines';
import { QWEN3_TOKENIZER_JSON } from '@anneal/engines/testing';
import { createRng } from '@anneal/rl';
import { LEDGER_CODECS } from '@anneal/store';

/** How far apart in the text the benchmarks start a prompt's rollouts (the fake vLLM's own
 * stride, packages/engines/test/vllm/fake-server.ts SAMPLE_STRIDE): far enough that no two
 * share text gzip could find, as a model's rollouts of one prompt differ. */
export const WINDOW_STRIDE = 5003;
/** Ids in the text the fake sampler draws its windows from (about 1 MB of text). */
const TEXT_TOKENS = 1 << 18;
/** Zipf exponent over the common words' rank. */
const ZIPF = 1.0;
/** The share of words drawn from the rest of the vocabulary instead. */
const RARE = 0.2;
/** Common English words, most frequent first (each a Qwen3 token after a space). */
const COMMON =
  'the of and to a in is that for it as was with be by on not he this are or his from at ' +
  'which but have an they you were her she there been one all we their has would when if so ' +
  'no will more can who out said do about what up its into than them only could new other ' +
  'some time two may then these first any my now such like our over man me even most made ' +
  'after also did many before must through back years where much your way well down should ' +
  'because each just those people how too little state good very make world still own see men ' +
  'work long get here between both life being under never day same another know while last ' +
  'might us great old year off come since against go came right used take three states ' +
  'himself few house use during without again place around however home small found thought ' +
  'went say part once general high upon school every does got united left number course war ' +
  'until always away something fact though water less public put think almost hand enough far ' +
  'took head yet government system better set told nothing night end why called didn find ' +
  'look going asked later knew point next program city business give group toward young days ' +
  'let room president side social given present several order national possible rather second ' +
  'face per among form important often things looked early white case john become large big ' +
  'need four within felt along children saw best church ever least power development light ' +
  'thing seemed family interest want members mind country area others done turned although ' +
  'open god service certain kind problem began different door thus help sense means whole ' +
  'matter perhaps itself york times law human line above name example action company hands ' +
  'local show whether five history gave today either act feet across taken past quite ' +
  'anything having seen death experience body word half really week car field question words ' +
  'money';

let cached: number[] | undefined;

/** TEXT_TOKENS prose-like Qwen3 ids, the same on every call and machine. */
export function modelTextIds(): number[] {
  if (cached) return cached;
  const vocab = (
    JSON.parse(readFileSync(QWEN3_TOKENIZER_JSON, 'utf8')) as {
      model: { vocab: Record<string, number> };
    }
  ).model.vocab;
  const wordId = (word: string) => vocab[`Ġ${word}`];
  const common = COMMON.split(' ').flatMap((word) => wordId(word) ?? []);
  const rare = Object.entries(vocab)
    .filter(([token]) => /^Ġ[a-z]{5,14}$/.test(token))
    .map(([, id]) => id)
    .sort((a, b) => a - b);
  const id = (token: string) => {
    const found = vocab[token];
    if (found === undefined) throw new Error(`model-text: '${token}' is not a Qwen3 token`);
    return found;
  };
  const [comma, stop, breakLine] = [id(','), id('.'), id('ĊĊ')];
  const digits = Array.from({ length: 10 }, (_, d) => id(String(d)));
  const space = id('Ġ');
  // cumulative Zipf weights over the words, drawn by binary search
  const cumulative = new Float64Array(common.length);
  let total = 0;
  common.forEach((_, rank) => {
    total += 1 / (rank + 1) ** ZIPF;
    cumulative[rank] = total;
  });
  const rng = createRng(2026);
  const word = () => {
    if (rng.next() < RARE) return rare[Math.floor(rng.next() * rare.length)]!;
    const u = rng.next() * total;
    let low = 0;
    let high = common.length - 1;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (cumulative[mid]! < u) low = mid + 1;
      else high = mid;
    }
    return common[low]!;
  };
  const ids: number[] = [];
  while (ids.length < TEXT_TOKENS) {
    const sentence = 6 + Math.floor(rng.next() * 18);
    for (let w = 0; w < sentence; w++) {
      if (rng.next() < 0.03) {
        // a number: " 1932"
        ids.push(space);
        const n = 1 + Math.floor(rng.next() * 4);
        for (let d = 0; d < n; d++) ids.push(digits[Math.floor(rng.next() * 10)]!);
      } else {
        ids.push(word());
      }
      if (w > 2 && w < sentence - 2 && rng.next() < 0.08) ids.push(comma);
    }
    ids.push(stop);
    if (rng.next() < 0.15) ids.push(breakLine);
  }
  cached = ids.slice(0, TEXT_TOKENS);
  return cached;
}

/** The text's UTF-8 bytes a token, its gzip ratio at level 1 (prose's usual yardstick, and the
 * ledger's codec until 2026-12-07) and its ratio under the ledger's default codec (Brotli), over
 * 16 windows of 4,096 tokens: what the benchmarks print beside their figures. */
export async function textStats(): Promise<{
  bytesPerToken: number;
  gzipRatio: number;
  ledgerRatio: number;
}> {
  const tokenizer = loadHfTokenizer(QWEN3_TOKENIZER_JSON, { eosToken: '<|endoftext|>' });
  const window = Int32Array.from(modelTextIds().slice(0, 16 * 4096));
  const bytes = Buffer.from(tokenizer.decode(window), 'utf8');
  return {
    bytesPerToken: bytes.length / window.length,
    gzipRatio: bytes.length / gzipSync(bytes, { level: 1 }).length,
    ledgerRatio: bytes.length / (await LEDGER_CODECS.brotli.compress(bytes)).length,
  };
}
