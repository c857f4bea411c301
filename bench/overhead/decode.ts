// bench/overhead/decode.ts: the tokenizer's `decode` (hf-bpe.ts) on 4,096-token turns of
// model-like text (pipeline/model-text.ts, Qwen3's tokenizer) — the rollout loop's decode of
// every turn — against the same run's floor: TextDecoder over the turns' UTF-8 bytes alone. The
// turns are 64 windows spread over the text, as a step's rollouts are, so the tokenizer's tables
// are read as a step reads them (one window decoded over and over stays in the cache and reads
// 2–3× faster). The overhead bench's step decodes about 4 M such tokens (policy and reference
// rollouts). `npm run bench:decode -w bench`.
import { loadHfTokenizer } from '@anneal/engines';
import { QWEN3_TOKENIZER_JSON } from '@anneal/engines/testing';
import { WINDOW_STRIDE, modelTextIds } from '../pipeline/model-text.ts';

const TURN_TOKENS = 4096;
const TURNS = 64;
const PASSES = 16;
const ROUNDS = 7;

const tokenizer = loadHfTokenizer(QWEN3_TOKENIZER_JSON, { eosToken: '<|endoftext|>' });
const text = modelTextIds();
const turns = Array.from({ length: TURNS }, (_, k) =>
  Int32Array.from({ length: TURN_TOKENS }, (_, i) => text[(k * WINDOW_STRIDE + i) % text.length]!),
);
const bytes = turns.map((ids) => new TextEncoder().encode(tokenizer.decode(ids)));
const utf8 = new TextDecoder();

/** ns a token over PASSES passes of every turn, the median of ROUNDS rounds (one warms up). */
function nsPerToken(run: (turn: number) => number): number {
  const rounds: number[] = [];
  let sink = 0;
  for (let round = 0; round <= ROUNDS; round += 1) {
    const start = process.hrtime.bigint();
    for (let pass = 0; pass < PASSES; pass += 1) {
      for (let turn = 0; turn < TURNS; turn += 1) sink += run(turn);
    }
    const ns = Number(process.hrtime.bigint() - start) / (PASSES * TURNS * TURN_TOKENS);
    if (round > 0) rounds.push(ns);
  }
  if (sink === 0) throw new Error('nothing decoded');
  return rounds.sort((a, b) => a - b)[Math.floor(rounds.length / 2)]!;
}

const decode = nsPerToken((turn) => tokenizer.decode(turns[turn]!).length);
const floor = nsPerToken((turn) => utf8.decode(bytes[turn]!).length);
const bytesPerToken = bytes.reduce((n, b) => n + b.length, 0) / (TURNS * TURN_TOKENS);
console.log(
  `bench/overhead/decode: ${TURNS} turns of ${TURN_TOKENS} tokens of model-like text ` +
    `(${bytesPerToken.toFixed(2)} bytes a token), median of ${ROUNDS} rounds of ${PASSES} passes`,
);
console.log(`  decode                       ${decode.toFixed(2)} ns a token`);
console.log(`  floor: TextDecoder of bytes  ${floor.toFixed(2)} ns a token`);
console.log(`  decode ÷ floor               ${(decode / floor).toFixed(1)}×`);
