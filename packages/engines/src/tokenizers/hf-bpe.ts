// A Hugging Face `tokenizer.json` byte-level BPE tokenizer (GPT-2, Llama-3, Qwen2 style),
// implementing the engines' `Tokenizer` contract. Encoding: added tokens are split out first as
// whole strings, the rest is normalized (NFC if configured), pre-tokenized by the file's regexes,
// mapped to byte-level characters and merged by rank. `encode` adds no BOS/EOS — rollouts and
// chat templates assemble their own sequences (like HF `add_special_tokens=False`, which
// `apply_chat_template` uses); `encodeWithSpecialTokens` adds what the file's `post_processor`
// puts around a sequence (Llama-3's BOS), like the reference's default `encode`.
import { readFileSync } from 'node:fs';
import type { TokenIds, Tokenizer } from '../types.ts';
import { BYTE_DECODER, toByteLevel } from './byte-level.ts';
import { DecodeTable, ROW_BYTES } from './decode-table.ts';
import {
  TokenizerConfigError,
  parseHfTokenizer,
  type AddedToken,
  type HfBpeTables,
} from './hf-config.ts';

export interface HfTokenizerOptions {
  /** Text of the end-of-sequence token, e.g. '<|im_end|>' or '<|endoftext|>'. */
  eosToken: string;
  /** Pre-token -> ids entries kept before the cache is cleared (default 50 000). */
  cacheSize?: number;
}

export { TokenizerConfigError };
export type { AddedToken };

/** A row's length byte for an added token or one of ROW_BYTES or more (its piece elsewhere). */
const LONG = 0xff;

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export class HfBpeTokenizer implements Tokenizer {
  readonly eosTokenId: number;
  readonly vocabSize: number;
  private readonly addedByContent = new Map<string, number>();
  private readonly addedById = new Map<number, string>();
  private readonly idToToken = new Map<number, string>();
  private readonly addedPattern: RegExp | undefined;
  private readonly cache = new Map<string, number[]>();
  private readonly cacheSize: number;
  private readonly utf8 = new TextDecoder('utf-8', { fatal: false });

  constructor(
    private readonly tables: HfBpeTables,
    options: HfTokenizerOptions,
  ) {
    let maxId = -1;
    for (const [token, id] of tables.vocab) {
      this.idToToken.set(id, token);
      maxId = Math.max(maxId, id);
    }
    for (const { id, content } of tables.added) {
      this.addedByContent.set(content, id);
      this.addedById.set(id, content);
      maxId = Math.max(maxId, id);
    }
    this.vocabSize = maxId + 1;
    // Longest first, so '<|im_end|>' is not cut short by a prefix that is also a token.
    const contents = [...this.addedByContent.keys()].sort((a, b) => b.length - a.length);
    this.addedPattern =
      contents.length > 0 ? new RegExp(contents.map(escapeRegExp).join('|'), 'gu') : undefined;
    const eos = this.addedByContent.get(options.eosToken) ?? tables.vocab.get(options.eosToken);
    if (eos === undefined) {
      throw new TokenizerConfigError(
        `eosToken '${options.eosToken}' is not a token of this tokenizer`,
      );
    }
    this.eosTokenId = eos;
    this.cacheSize = options.cacheSize ?? 50_000;
  }

  /** Id of an added token (special markers such as '<tool_call>'). */
  specialTokenId(marker: string): number | undefined {
    return this.addedByContent.get(marker);
  }

  /** The file's `added_tokens` (special or not), e.g. to keep them out of untrusted text. */
  addedTokens(): readonly AddedToken[] {
    return this.tables.added;
  }

  /** First id the post_processor puts before a sequence (BOS), if any. */
  get bosTokenId(): number | undefined {
    return this.tables.specialPrefix[0];
  }

  /** `encode` plus the post_processor's special tokens (the reference's default encode). */
  encodeWithSpecialTokens(text: string): number[] {
    return [...this.tables.specialPrefix, ...this.encode(text), ...this.tables.specialSuffix];
  }

  encode(text: string): number[] {
    const ids: number[] = [];
    let last = 0;
    if (this.addedPattern) {
      for (const match of text.matchAll(this.addedPattern)) {
        this.encodeOrdinary(text.slice(last, match.index), ids);
        ids.push(this.addedByContent.get(match[0]) as number);
        last = match.index + match[0].length;
      }
    }
    this.encodeOrdinary(text.slice(last), ids);
    return ids;
  }

  /** Each token as decode needs it, built on first use (decode runs over every turn of every
   * rollout), in one 16-byte row of the decode table (decode-table.ts; four little-endian words
   * at 4·id): a token of at most 15 bytes (nearly every token of prose) has its bytes in bytes
   * 0–14 and its length in byte 15, and is written with one 16-byte store; byte 15 is 0 until
   * the row is built and LONG for an added token or a longer one, whose text or bytes are in
   * `pieces`. One table read a token and no per-byte loop, in the table's WebAssembly kernel: a
   * loop over a `Uint8Array` per token was 40–50 ns a token of prose-like text, the rows in
   * JavaScript 13–18, in the kernel about 2 (bench/overhead/decode.ts). */
  private decodeTable: DecodeTable | undefined;
  /** Filled with `undefined` up front: a sparse array filled in random id order would turn into
   * a dictionary and cost a hash lookup a long token. */
  private pieces: (Uint8Array | string | undefined)[] = [];

  /** One past the largest token id. */
  private vocabularyEnd(): number {
    let end = 0;
    for (const id of this.idToToken.keys()) end = Math.max(end, id + 1);
    for (const id of this.addedById.keys()) end = Math.max(end, id + 1);
    return end;
  }

  /** Builds token `id`'s row (and its `pieces` entry for an added or long token). */
  private buildPiece(id: number, rows: Int32Array): void {
    const added = this.addedById.get(id);
    const last = 4 * id + 3;
    if (added !== undefined) {
      this.pieces[id] = added;
      rows[last] = LONG << 24;
      return;
    }
    const token = this.idToToken.get(id);
    if (token === undefined) throw new RangeError(`token id ${id} is outside the vocabulary`);
    const bytes: number[] = [];
    for (const char of token) {
      const byte = BYTE_DECODER.get(char);
      if (byte === undefined) {
        throw new RangeError(`token id ${id} ('${token}') is not a byte-level token`);
      }
      bytes.push(byte);
    }
    // (an empty token's row would read as not built: it is a long one of no bytes)
    if (bytes.length > 0 && bytes.length < ROW_BYTES) {
      bytes.forEach((byte, k) => {
        rows[4 * id + (k >> 2)]! |= byte << (8 * (k & 3));
      });
      rows[last]! |= bytes.length << 24;
    } else {
      this.pieces[id] = Uint8Array.from(bytes);
      rows[last] = LONG << 24;
    }
  }

  decode(tokens: TokenIds): string {
    const table = (this.decodeTable ??= new DecodeTable(this.vocabularyEnd()));
    if (this.pieces.length === 0)
      this.pieces = new Array<undefined>(table.rowCount).fill(undefined);
    const start = table.load(tokens);
    let out = '';
    let at = start;
    for (let i = 0; ;) {
      // the table's loop runs up to the first token it cannot write, which is written here
      i = table.copyRows(i, at);
      at = table.end;
      if (i >= tokens.length) break;
      const id = tokens[i]!;
      if (!(id >= 0 && id < table.rowCount) || table.rows[4 * id + 3] === 0) {
        // a row not built yet (or an id outside the table: buildPiece throws), then again
        this.buildPiece(id, table.rows);
        continue;
      }
      const piece = this.pieces[id]!;
      i += 1;
      if (typeof piece === 'string') {
        out += this.utf8.decode(table.slice(start, at)) + piece;
        at = start;
      } else {
        at = table.append(piece, at, i);
      }
    }
    return at > start ? out + this.utf8.decode(table.slice(start, at)) : out;
  }

  private encodeOrdinary(text: string, ids: number[]): void {
    if (text.length === 0) return;
    const normalized = this.tables.normalization === 'NFC' ? text.normalize('NFC') : text;
    for (const piece of this.preTokenize(normalized)) {
      let pieceIds = this.cache.get(piece);
      if (pieceIds === undefined) {
        pieceIds = this.bpe(toByteLevel(piece));
        if (this.cache.size >= this.cacheSize) this.cache.clear();
        this.cache.set(piece, pieceIds);
      }
      for (const id of pieceIds) ids.push(id);
    }
  }

  /** Split Isolated: every match and every gap between matches is a piece. */
  private preTokenize(text: string): string[] {
    let pieces = [text];
    for (const regex of this.tables.splits) {
      const next: string[] = [];
      for (const piece of pieces) {
        let last = 0;
        for (const match of piece.matchAll(regex)) {
          if (match[0].length === 0) continue;
          if (match.index > last) next.push(piece.slice(last, match.index));
          next.push(match[0]);
          last = match.index + match[0].length;
        }
        if (last < piece.length) next.push(piece.slice(last));
      }
      pieces = next;
    }
    return pieces;
  }

  /** Merge adjacent symbols, lowest merge rank first, until no ranked pair remains. */
  private bpe(word: string): number[] {
    const { vocab, ranks } = this.tables;
    const whole = this.tables.ignoreMerges ? vocab.get(word) : undefined;
    if (whole !== undefined) return [whole];
    let symbols = Array.from(word);
    while (symbols.length > 1) {
      let bestRank = Infinity;
      let bestPair = '';
      for (let i = 0; i < symbols.length - 1; i++) {
        const pair = `${symbols[i]} ${symbols[i + 1]}`;
        const rank = ranks.get(pair);
        if (rank !== undefined && rank < bestRank) {
          bestRank = rank;
          bestPair = pair;
        }
      }
      if (bestRank === Infinity) break;
      const merged: string[] = [];
      for (let i = 0; i < symbols.length; i++) {
        const symbol = symbols[i] as string;
        if (i < symbols.length - 1 && `${symbol} ${symbols[i + 1]}` === bestPair) {
          merged.push(symbol + (symbols[i + 1] as string));
          i++;
        } else {
          merged.push(symbol);
        }
      }
      symbols = merged;
    }
    return symbols.map((symbol) => {
      const id = vocab.get(symbol);
      if (id === undefined) {
        throw new TokenizerConfigError(`tokenizer.json model.vocab has no token '${symbol}'`);
      }
      return id;
    });
  }
}

/** Build from a parsed tokenizer.json object. */
export function hfTokenizerFromJson(json: unknown, options: HfTokenizerOptions): HfBpeTokenizer {
  return new HfBpeTokenizer(parseHfTokenizer(json), options);
}

/** Load `tokenizer.json` from disk (the path is given by the caller's config). */
export function loadHfTokenizer(path: string, options: HfTokenizerOptions): HfBpeTokenizer {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new TokenizerConfigError(`cannot read tokenizer file ${path}: ${String(error)}`);
  }
  try {
    return hfTokenizerFromJson(json, options);
  } catch (error) {
    if (error instanceof TokenizerConfigError) {
      throw new TokenizerConfigError(`${path}: ${error.message}`);
    }
    throw error;
  }
}
