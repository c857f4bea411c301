// bench/overhead/decode.ts: the tokenizer's `decode` (hf-bpe.ts) on a 4,096-token turn of
// model-like text (pipeline/model-text.ts, Qwen3's tokenizer), the rollout loop's decode of
// every turn, against the same run's floor: TextDecoder over the turn's UTF-8 bytes alone. The
// overhead bench's step decodes about 4 M such tokens (policy and reference rollouts).
// `npm run bench:decode -w bench`.
import { loadHfTokenizer } from '@anneal/engines';
import { QWEN3_TOKENIZER_JSON } from '@anneal/engines/testing';
import { modelTextIds } from '../pipeline/model-text.ts';

const TURN_TOKENS = 4096;
const TURNS = 1000;
const ROUNDS = 7;

const tokenizer = loadHfTokenizer(QWEN3_TOKENIZER_JSON, { eosToken: '<|endoftext|>' });
const text = modelTextIds();
const ids = Int32Array.from({ length: TURN_TOKENS }, (_, i) => text[i % text.length]!);
const bytes = new TextEncoder().encode(tokenizer.decode(ids));
const utf8 = new TextDecoder();

/** ns a token over TURNS calls, the median of ROUNDS rounds (the first warms up). */
function nsPerToken(run: () => number): number {
  const rounds: number[] = [];
  let sink = 0;
  for (let round = 0; round <= ROUNDS; round += 1) {
    const start = process.hrtime.bigint();
    for (let turn = 0; turn < TURNS; turn += 1) sink += run();
    const ns = Number(process.hrtime.bigint() - start) / (TURNS * TURN_TOKENS);
    if (round > 0) rounds.push(ns);
  }
  if (sink === 0) throw new Error('nothing decoded');
  return rounds.sort((a, b) => a - b)[Math.floor(rounds.length / 2)]!;
}

const decode = nsPerToken(() => tokenizer.decode(ids).length);
const floor = nsPerToken(() => utf8.decode(bytes).length);
console.log(
  `bench/overhead/decode: ${TURN_TOKENS}-token turns of model-like text ` +
    `(${(bytes.length / TURN_TOKENS).toFixed(2)} bytes a token), median of ${ROUNDS} rounds of ${TURNS}`,
);
console.log(`  decode                       ${decode.toFixed(2)} ns a token`);
console.log(`  floor: TextDecoder of bytes  ${floor.toFixed(2)} ns a token`);
console.log(`  decode ÷ floor               ${(decode / floor).toFixed(1)}×`);
