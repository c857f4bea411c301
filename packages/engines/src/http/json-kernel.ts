// The JSON kernel (wasm/json-kernel.wat, embedded as base64 by json-kernel-bytes.ts): the loops
// that skip vLLM's per-token arrays and long strings and read arrays of float32 logprobs and
// int32 ids, run in WebAssembly over a copy of the reply (json-bytes-reader.ts uses them for
// every reply up to KERNEL_MAX_BYTES), and the loop that writes float32 arrays as short text (json-text.ts's
// `float32s`, over a copy of the values). One instance and memory per thread, compiled on first
// use; a reply or an array is copied in, read or written, and the next copied over it (readers
// and writers are synchronous: one at a time per thread, which `KernelReply` and `KernelFloats`
// check). The memory grows to about three times the largest reply read, or 22 bytes a value of
// the largest array written (at most KERNEL_MAX_BYTES; anything larger is left to the JavaScript
// loops), and is kept for the thread's life, like the HTTP body buffers it copies from.
import { compileEmbedded, instantiate, type WasmMemory } from '../wasm-module.ts';
import { JSON_KERNEL_BASE64 } from './json-kernel-bytes.ts';

/** Replies above this are read by the JavaScript loops alone (the memory kept is ~3× it). */
export const KERNEL_MAX_BYTES = 64 * 1024 * 1024;

interface KernelExports {
  memory: WasmMemory;
  end: { value: number };
  skip_flat(pos: number): number;
  skip_string(pos: number): number;
  read_f32s(pos: number, out: number, capacity: number): number;
  read_i32s(pos: number, out: number, capacity: number): number;
  write_f32s(values: number, from: number, count: number, out: number): number;
}

/** Bytes [0, RESERVED) are the kernel's constants (see the .wat). */
const RESERVED = 512;
/** Most bytes write_f32s writes a value, its comma included (FLOAT32_TEXT_MAX_BYTES + 1). */
const FLOAT32_TEXT_BYTES = 18;
/** Zero bytes after the reply: the kernel's 8-byte loads past a loop's last byte stay in them;
 * spare bytes after the room for a float array's text: its 8-byte stores past the text's end. */
const PADDING = 16;
const PAGE = 65_536;

/** The thread's kernel: undefined until first use, null without WebAssembly. */
let kernel: Kernel | null | undefined;

class Kernel {
  /** Which reply the memory holds (a KernelReply reads only its own). */
  generation = 0;
  private bytes: Uint8Array;
  private floats: Float32Array;
  private ints: Int32Array;

  constructor(private readonly exports: KernelExports) {
    const { buffer } = exports.memory;
    this.bytes = new Uint8Array(buffer);
    this.floats = new Float32Array(buffer);
    this.ints = new Int32Array(buffer);
  }

  /** Copies `reply` in at RESERVED, zero padding after it and room for its values after that. */
  load(reply: Uint8Array): KernelReply {
    const out = RESERVED + Math.ceil((reply.length + PADDING) / 8) * 8;
    // a value takes at least two bytes of its array ("1,"): at most (length + 1) / 2 of them
    const capacity = Math.ceil((reply.length + 1) / 2);
    this.reserve(out + 4 * capacity);
    this.bytes.set(reply, RESERVED);
    this.bytes.fill(0, RESERVED + reply.length, RESERVED + reply.length + PADDING);
    this.generation += 1;
    return new KernelReply(this, this.generation, out, capacity);
  }

  /** Copies `values` in at RESERVED, room for their text after them (and for the bytes the
   * kernel's digit writer overwrites past the last value's text). */
  loadFloats(values: Float32Array): KernelFloats {
    const text = RESERVED + 4 * values.length;
    this.reserve(text + FLOAT32_TEXT_BYTES * values.length + PADDING);
    this.floats.set(values, RESERVED / 4);
    this.generation += 1;
    return new KernelFloats(this, this.generation, values.length, text);
  }

  writeFloats(from: number, count: number, out: number): number {
    return this.exports.write_f32s(RESERVED, from, count, out);
  }

  /** The bytes from `out` to where the last write_f32s ended (a view: copy before the next call). */
  written(out: number): Uint8Array {
    return this.bytes.subarray(out, this.exports.end.value);
  }

  /** Grows the memory to at least `bytes` (views made again: growing detaches the old buffer). */
  private reserve(bytes: number): void {
    const { memory } = this.exports;
    if (bytes <= memory.buffer.byteLength) return;
    memory.grow(Math.ceil((bytes - memory.buffer.byteLength) / PAGE));
    const { buffer } = memory;
    this.bytes = new Uint8Array(buffer);
    this.floats = new Float32Array(buffer);
    this.ints = new Int32Array(buffer);
  }

  skipFlat(pos: number): number {
    const end = this.exports.skip_flat(RESERVED + pos);
    return end < 0 ? -1 : end - RESERVED;
  }

  skipString(pos: number): number {
    const end = this.exports.skip_string(RESERVED + pos);
    return end < 0 ? -1 : end - RESERVED;
  }

  float32s(pos: number, out: number, capacity: number): Float32Array | undefined {
    const count = this.exports.read_f32s(RESERVED + pos, out, capacity);
    if (count < 0) return undefined;
    return this.floats.slice(out / 4, out / 4 + count);
  }

  int32s(pos: number, out: number, capacity: number): Int32Array | undefined {
    const count = this.exports.read_i32s(RESERVED + pos, out, capacity);
    if (count < 0) return undefined;
    return this.ints.slice(out / 4, out / 4 + count);
  }

  /** The offset after the array the last float32s or int32s read. */
  end(): number {
    return this.exports.end.value - RESERVED;
  }
}

/** One reply in the kernel's memory; offsets are the reply's own. */
export class KernelReply {
  constructor(
    private readonly kernel: Kernel,
    private readonly generation: number,
    private readonly out: number,
    private readonly capacity: number,
  ) {}

  /** The offset after the array whose opening bracket is at `pos` when it is flatArrayEnd's
   * kind of array (scalars, or objects of scalars, no whitespace, no escapes), else -1. */
  skipFlat(pos: number): number {
    return this.current().skipFlat(pos);
  }

  /** The offset after the string whose opening quote is at `pos` when it has no control byte
   * and only escapes stringEnd takes (checked and passed over), else -1. */
  skipString(pos: number): number {
    return this.current().skipString(pos);
  }

  /** The array of numbers whose opening bracket is at `pos`, as float32 (readFloat32's values),
   * `end()` after it; undefined when it is not in the kernel's plain form. */
  float32s(pos: number): Float32Array | undefined {
    return this.current().float32s(pos, this.out, this.capacity);
  }

  /** The array of ids whose opening bracket is at `pos` (flatIds' form), `end()` after it;
   * undefined otherwise. */
  int32s(pos: number): Int32Array | undefined {
    return this.current().int32s(pos, this.out, this.capacity);
  }

  /** The offset after the array the last float32s or int32s returned. */
  end(): number {
    return this.current().end();
  }

  private current(): Kernel {
    return current(this.kernel, this.generation);
  }
}

/** One float32 array in the kernel's memory, written as text a stretch at a time. */
export class KernelFloats {
  constructor(
    private readonly kernel: Kernel,
    private readonly generation: number,
    private readonly count: number,
    private readonly out: number,
  ) {}

  /** Writes the values from `from` as writeFloat32Of writes them, a comma between two, up to the
   * first that json-text.ts's `float32s` writes otherwise (an integer, a value equal to the one
   * before, a magnitude outside [1e-14, 1e9)); returns that one's index (the count when none).
   * The text is `text()`. */
  write(from: number): number {
    return current(this.kernel, this.generation).writeFloats(from, this.count, this.out);
  }

  /** What the last `write` wrote: a view of the kernel's memory, valid until the next call. */
  text(): Uint8Array {
    return current(this.kernel, this.generation).written(this.out);
  }
}

function current(kernel: Kernel, generation: number): Kernel {
  if (kernel.generation !== generation) {
    throw new Error('JSON kernel: an array was read after another one was copied in over it');
  }
  return kernel;
}

function instantiateKernel(): Kernel | null {
  const module = compileEmbedded(JSON_KERNEL_BASE64);
  return module === null ? null : new Kernel(instantiate<KernelExports>(module));
}

/** `reply` copied into this thread's kernel; undefined when it is over KERNEL_MAX_BYTES or this
 * runtime has no WebAssembly. */
export function loadReply(reply: Uint8Array): KernelReply | undefined {
  if (reply.length > KERNEL_MAX_BYTES) return undefined;
  kernel ??= instantiateKernel();
  return kernel?.load(reply);
}

/** `values` copied into this thread's kernel for writing; undefined when their text could take
 * more than KERNEL_MAX_BYTES or this runtime has no WebAssembly. */
export function loadFloats(values: Float32Array): KernelFloats | undefined {
  if (values.length * FLOAT32_TEXT_BYTES > KERNEL_MAX_BYTES) return undefined;
  kernel ??= instantiateKernel();
  return kernel?.loadFloats(values);
}
