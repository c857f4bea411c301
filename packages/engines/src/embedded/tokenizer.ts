// Byte-level tokenizer of the embedded model: ids 0..255 are UTF-8 bytes, then a few
// special markers used by the tool-call format (see packages/envs README).
import type { TokenIds, Tokenizer } from '../types.ts';

export const SPECIAL_MARKERS = [
  '<|eos|>', // end of sequence
  '<|call|>', // start of a search_web call; the query follows as text
  '<|/call|>', // end of the call: a stop token, the environment runs the tool
  '<|result|>', // start of a tool output (appended by the environment, masked from the loss)
  '<|/result|>', // end of a tool output
  '<|answer|>', // the final answer follows as text, then <|eos|>
  '<|user|>', // start of the user turn (prompt)
  '<|assistant|>', // start of the assistant turn
] as const;

const BYTE_VOCAB = 256;
const markerPattern = new RegExp(
  SPECIAL_MARKERS.map((m) => m.replace(/[|/]/g, (c) => `\\${c}`)).join('|'),
  'g',
);

export class ByteTokenizer implements Tokenizer {
  readonly vocabSize = BYTE_VOCAB + SPECIAL_MARKERS.length;
  readonly eosTokenId = BYTE_VOCAB; // '<|eos|>'
  private readonly encoder = new TextEncoder();
  private readonly decoder = new TextDecoder();

  specialTokenId(marker: string): number | undefined {
    const index = (SPECIAL_MARKERS as readonly string[]).indexOf(marker);
    return index < 0 ? undefined : BYTE_VOCAB + index;
  }

  encode(text: string): number[] {
    const ids: number[] = [];
    let last = 0;
    for (const match of text.matchAll(markerPattern)) {
      ids.push(...this.encoder.encode(text.slice(last, match.index)));
      ids.push(this.specialTokenId(match[0]) as number);
      last = match.index + match[0].length;
    }
    ids.push(...this.encoder.encode(text.slice(last)));
    return ids;
  }

  decode(tokens: TokenIds): string {
    let out = '';
    let bytes: number[] = [];
    const flush = () => {
      out += this.decoder.decode(Uint8Array.from(bytes));
      bytes = [];
    };
    for (const id of tokens) {
      if (id < BYTE_VOCAB) {
        bytes.push(id);
        continue;
      }
      flush();
      const marker = SPECIAL_MARKERS[id - BYTE_VOCAB];
      if (marker === undefined) throw new RangeError(`token id ${id} is outside the vocabulary`);
      out += marker;
    }
    flush();
    return out;
  }
}
