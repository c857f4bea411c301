// The tokenizer's decode table (hf-bpe.ts `decode`) and the memory decode writes its bytes in:
// one row of 16 bytes a token id (up to 15 bytes of the token and their count, see hf-bpe.ts),
// then the ids being decoded, then their bytes. The loop over tokens whose rows hold them — nearly
// every token of prose — runs in the decode kernel (wasm/decode-kernel.wat, embedded as base64 by
// decode-kernel-bytes.ts) where the runtime has WebAssembly SIMD, else in the same loop in
// JavaScript over an ordinary buffer; every other token is the tokenizer's to write. One table a
// tokenizer (decode is synchronous: one call at a time), grown to the longest decode and kept.
import type { TokenIds } from '../types.ts';
import { compileEmbedded, instantiate, type WasmMemory } from '../wasm-module.ts';
import { DECODE_KERNEL_BASE64 } from './decode-kernel-bytes.ts';

/** Bytes of a row: up to 15 of the token's, its count in the last. */
export const ROW_BYTES = 16;
const PAGE = 65_536;

interface KernelExports {
  memory: WasmMemory;
  end: { value: number };
  copy_rows(ids: number, from: number, count: number, rows: number, out: number): number;
}

/** undefined: not tried yet; null: this runtime has no WebAssembly SIMD (the loop stores a row
 * as one v128). */
let compiled: object | null | undefined;

/** The decode kernel, compiled once a thread. */
function kernelModule(): object | null {
  if (compiled === undefined) compiled = compileEmbedded(DECODE_KERNEL_BASE64);
  return compiled;
}

/** Where the rows are copied from and written to: the kernel's memory, or a plain buffer. */
interface Backing {
  buffer(): ArrayBuffer;
  /** Makes the backing at least `bytes` long, its contents kept. */
  reserve(bytes: number): void;
  /** copy_rows's contract (decode-kernel.wat); the end of the bytes written is `end()`. */
  copyRows(ids: number, from: number, count: number, rows: number, out: number): number;
  end(): number;
}

class KernelBacking implements Backing {
  constructor(private readonly exports: KernelExports) {}
  buffer(): ArrayBuffer {
    return this.exports.memory.buffer;
  }
  reserve(bytes: number): void {
    const { memory } = this.exports;
    if (bytes > memory.buffer.byteLength) {
      memory.grow(Math.ceil((bytes - memory.buffer.byteLength) / PAGE));
    }
  }
  copyRows(ids: number, from: number, count: number, rows: number, out: number): number {
    return this.exports.copy_rows(ids, from, count, rows, out);
  }
  end(): number {
    return this.exports.end.value;
  }
}

/** The kernel's loop in JavaScript, over an ordinary buffer (a runtime without WebAssembly). */
class ScriptBacking implements Backing {
  private bytes = new ArrayBuffer(PAGE);
  private view = new DataView(this.bytes);
  private ints = new Int32Array(this.bytes);
  private written = 0;
  buffer(): ArrayBuffer {
    return this.bytes;
  }
  reserve(bytes: number): void {
    if (bytes <= this.bytes.byteLength) return;
    const grown = new ArrayBuffer(Math.ceil(bytes / PAGE) * PAGE);
    new Uint8Array(grown).set(new Uint8Array(this.bytes));
    this.bytes = grown;
    this.view = new DataView(grown);
    this.ints = new Int32Array(grown);
  }
  copyRows(ids: number, from: number, count: number, rows: number, out: number): number {
    const { view, ints } = this;
    let i = from;
    for (; i < count; i += 1) {
      const id = ints[ids / 4 + i]!;
      if (id < 0 || id >= rows) break;
      const row = 4 * id;
      const last = ints[row + 3]!;
      const size = last >>> 24;
      if (size === 0 || size >= ROW_BYTES) break;
      view.setInt32(out, ints[row]!, true);
      view.setInt32(out + 4, ints[row + 1]!, true);
      view.setInt32(out + 8, ints[row + 2]!, true);
      view.setInt32(out + 12, last, true);
      out += size;
    }
    this.written = out;
    return i;
  }
  end(): number {
    return this.written;
  }
}

/** The rows of `rowCount` token ids, zero (not built) until the tokenizer writes them. */
export class DecodeTable {
  private readonly backing: Backing;
  private readonly idsAt: number;
  private current: ArrayBuffer;
  private words: Int32Array;
  private bytes: Uint8Array;
  /** How many ids the current decode has. */
  private count = 0;

  /** `kernel: false` runs the JavaScript loop even where the kernel could run (tests). */
  constructor(
    readonly rowCount: number,
    options: { kernel?: boolean } = {},
  ) {
    const module = options.kernel === false ? null : kernelModule();
    this.backing =
      module === null ? new ScriptBacking() : new KernelBacking(instantiate<KernelExports>(module));
    this.idsAt = ROW_BYTES * rowCount;
    this.backing.reserve(this.idsAt);
    this.current = this.backing.buffer();
    this.words = new Int32Array(this.current);
    this.bytes = new Uint8Array(this.current);
  }

  /** Whether the loop runs in the WebAssembly kernel. */
  get usesKernel(): boolean {
    return this.backing instanceof KernelBacking;
  }

  /** The rows as words: id's row is words 4·id .. 4·id + 3 (a view: read it again after a call
   * that may grow the memory — `load`, `append`). */
  get rows(): Int32Array {
    return this.words;
  }

  /** Copies in the ids of a decode, with room for 16 bytes a token after them; returns where
   * their bytes start. Throws a RangeError for an id that is not an int32. */
  load(ids: TokenIds): number {
    this.count = ids.length;
    const outAt = this.idsAt + 4 * ids.length;
    this.reserve(outAt + ROW_BYTES * (ids.length + 1));
    if (ids instanceof Int32Array) {
      this.words.set(ids, this.idsAt / 4);
      return outAt;
    }
    // A number that is not an int32 would be wrapped or truncated into another token's id.
    const words = this.words;
    const base = this.idsAt / 4;
    for (let i = 0; i < ids.length; i += 1) {
      const id = ids[i]!;
      if ((id | 0) !== id) throw new RangeError(`token id ${id} is outside the vocabulary`);
      words[base + i] = id;
    }
    return outAt;
  }

  /** The bytes of the loaded ids from index `from`, written at `out`, up to the first token whose
   * row does not hold it (an id outside the table, a row not built, an added or long token);
   * returns that token's index (the count when none) and, as `end`, the offset after the bytes. */
  copyRows(from: number, out: number): number {
    return this.backing.copyRows(this.idsAt, from, this.count, this.rowCount, out);
  }

  /** The offset after the bytes the last copyRows wrote. */
  get end(): number {
    return this.backing.end();
  }

  /** Writes `piece` at `at`, keeping room for 16 bytes a token from index `next` on; returns
   * the offset after it. */
  append(piece: Uint8Array, at: number, next: number): number {
    this.reserve(at + piece.length + ROW_BYTES * (this.count - next + 1));
    this.bytes.set(piece, at);
    return at + piece.length;
  }

  /** The bytes [from, to) of the memory. */
  slice(from: number, to: number): Uint8Array {
    return this.bytes.subarray(from, to);
  }

  private reserve(bytes: number): void {
    this.backing.reserve(bytes);
    const buffer = this.backing.buffer();
    if (buffer === this.current) return;
    // growing a WebAssembly memory detaches its old buffer: views are made again
    this.current = buffer;
    this.words = new Int32Array(buffer);
    this.bytes = new Uint8Array(buffer);
  }
}
