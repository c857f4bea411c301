// The WebAssembly SIMD step kernel (wasm/step-kernel.wat, embedded as base64 by step-wasm-bytes.ts)
// and the memories it runs on. A kernel reads and writes only its own linear memory, so there are
// two ways in (both used by step-math-wasm.ts):
//   - zero-copy: `createStepBuffers(tokens, rollouts)` allocates a batch's arrays as views over a
//     WebAssembly memory (fresh, or one `releaseStepBuffers` gave back); a step over those views
//     streams them in place;
//   - staged: any other typed arrays go through one shared kernel with a small (L2-sized) staging
//     area, a slice of tokens at a time.
// Pure: no I/O; the bytes are compiled once, synchronously, on first use.
import { STEP_KERNEL_BASE64 } from './step-wasm-bytes.ts';

/** The kernel's scan(lt, li, bounds, sums, count); see step-kernel.wat. */
type ScanFn = (lt: number, li: number, bounds: number, sums: number, count: number) => void;

// The part of the WebAssembly JS API used here (neither lib ES2023 nor @types/node 20 declares it).
interface WasmMemory {
  readonly buffer: ArrayBuffer;
}
interface WasmApi {
  validate(bytes: Uint8Array): boolean;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: Record<string, unknown> };
  Memory: new (descriptor: { initial: number; maximum: number }) => WasmMemory;
}

/** Pieces (rollouts or parts of rollouts) per kernel call; sizes the scratch area. */
export const PIECES_PER_CALL = 1024;
/** f64 values per piece in the kernel's results (see step-kernel.wat). */
export const SUM_FIELDS = 8;
/** Tokens per staging slice for arrays outside kernel memory: 2 × 64 KiB, stays in L2. */
export const STAGE_TOKENS = 16_384;
/** Bytes after every array the kernel touches (it over-reads at most 12, see the .wat). */
const SLACK = 16;
const ALIGN = 64;
const PAGE = 65_536;
const MAX_PAGES = 65_536; // 4 GiB: wasm32's limit

/** A kernel instance over its own memory, with the per-call scratch arrays at its start. */
export interface StepKernel {
  scan: ScanFn;
  buffer: ArrayBuffer;
  bounds: Int32Array; // (PIECES_PER_CALL + 1,)
  sums: Float64Array; // (PIECES_PER_CALL × SUM_FIELDS,)
  /** First byte after the scratch area: batch arrays must start at or after it. */
  dataStart: number;
}

/** A batch's arrays as views over one kernel's memory (see createStepBuffers). */
export interface StepBuffers {
  logpTrain: Float32Array; // (T,)
  logpInfer: Float32Array; // (T,)
  offsets: Int32Array; // (N + 1,)
  advantages: Float64Array; // (N,)
  /** (T,) the per-token advantages sent to the trainer (token-advantages.ts), for the caller to
   * write; the kernel does not read them. Here rather than a fresh array a step: 8 MiB of new
   * pages a production step cost more to fault in than filling them (bench/overhead). */
  tokenAdvantages: Float32Array;
  /** (S,) floats for the caller's own arrays of the step (the worker's trainer datums), S the
   * `scratchFloats` asked for; the kernel never reads them. */
  scratch: Float32Array;
}

const wasmApi = (globalThis as unknown as { WebAssembly?: WasmApi }).WebAssembly;
const kernelsByBuffer = new WeakMap<ArrayBuffer, StepKernel>();
let compiled: object | null | undefined; // undefined: not tried yet; null: no WebAssembly SIMD
let stagingKernel: { kernel: StepKernel; stage: StageArrays } | undefined;

const alignUp = (bytes: number) => Math.ceil(bytes / ALIGN) * ALIGN;

function decodeBase64(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function compiledKernel(): object | null {
  if (compiled !== undefined) return compiled;
  const bytes = decodeBase64(STEP_KERNEL_BASE64);
  // validate() is false where the engine lacks SIMD (the module uses v128 throughout)
  compiled = wasmApi?.validate(bytes) ? new wasmApi.Module(bytes) : null;
  return compiled;
}

/** Whether this runtime can run the kernel (WebAssembly with the SIMD proposal). */
export function wasmSimdAvailable(): boolean {
  return compiledKernel() !== null;
}

/** Bytes [0, KERNEL_RESERVED) of every kernel memory are the kernel's own (see the .wat). */
const KERNEL_RESERVED = 512;

/** Byte layout of the scratch area after the kernel's own bytes. */
const SCRATCH = (() => {
  const bounds = KERNEL_RESERVED;
  const sums = alignUp(bounds + 4 * (PIECES_PER_CALL + 1));
  return { bounds, sums, end: alignUp(sums + 8 * SUM_FIELDS * PIECES_PER_CALL) };
})();

/** A kernel over a fresh memory of at least `bytes` (scratch included); null without SIMD. */
function instantiate(bytes: number): StepKernel | null {
  const module = compiledKernel();
  if (module === null || wasmApi === undefined) return null;
  const pages = Math.ceil(bytes / PAGE);
  const memory = new wasmApi.Memory({ initial: pages, maximum: pages });
  const instance = new wasmApi.Instance(module, { env: { memory } });
  const { buffer } = memory;
  const kernel: StepKernel = {
    scan: instance.exports.scan as ScanFn,
    buffer,
    bounds: new Int32Array(buffer, SCRATCH.bounds, PIECES_PER_CALL + 1),
    sums: new Float64Array(buffer, SCRATCH.sums, SUM_FIELDS * PIECES_PER_CALL),
    dataStart: SCRATCH.end,
  };
  kernelsByBuffer.set(buffer, kernel);
  return kernel;
}

/** Kernels whose arrays releaseStepBuffers gave back, for createStepBuffers to reuse: mapping
 * a fresh memory costs a page fault on every page's first write, which on bench/overhead's
 * machine (a virtual machine) was ~3 ms a MiB — 23–31 ms to fill one 8.4 MB logprob array of a
 * production step, against ~0.3 ms for memory already mapped. At most MAX_RELEASED are kept (a step and its mismatch
 * probe hold one each at once); each keeps its memory until the process ends. */
const released: StepKernel[] = [];
const MAX_RELEASED = 2;
/** The `logpTrain` view of every set createStepBuffers handed out and not yet released: a set
 * is released once (a second release would hand one memory to two batches). */
const handedOut = new WeakSet<Float32Array>();

/** A released kernel whose memory holds `bytes`, the smallest such, taken from `released`. */
function reusedKernel(bytes: number): StepKernel | undefined {
  let best = -1;
  released.forEach((kernel, i) => {
    const size = kernel.buffer.byteLength;
    if (size >= bytes && (best < 0 || size < released[best]!.buffer.byteLength)) best = i;
  });
  return best < 0 ? undefined : released.splice(best, 1)[0];
}

/**
 * The arrays of a step (T tokens, N rollouts) allocated together in WebAssembly memory, so that
 * `stepTokenMath` over them streams them in place (no copy): gather the logprobs straight into
 * `logpTrain` and `logpInfer`, fill `offsets` and `advantages`, then pass them as the batch.
 * `scratchFloats` more floats (`scratch`) serve the caller's other arrays of the step: memory
 * reused step after step instead of fresh pages (bench/overhead: a step's trainer datums were
 * 17 MB of new arrays, 5 % of the orchestrator's main thread in page faults).
 * Every array starts zeroed. Without WebAssembly SIMD these are ordinary typed arrays (the
 * scalar path runs). The memory is freed with the views, or reused by a later call once
 * `releaseStepBuffers` gives it back.
 */
export function createStepBuffers(
  tokens: number,
  rollouts: number,
  scratchFloats = 0,
): StepBuffers {
  if (!Number.isInteger(tokens) || tokens < 0)
    throw new RangeError(`tokens: must be an integer >= 0, got ${tokens}`);
  if (!Number.isInteger(rollouts) || rollouts < 0)
    throw new RangeError(`rollouts: must be an integer >= 0, got ${rollouts}`);
  if (!Number.isInteger(scratchFloats) || scratchFloats < 0)
    throw new RangeError(`scratchFloats: must be an integer >= 0, got ${scratchFloats}`);
  const tokenBytes = alignUp(4 * tokens + SLACK);
  const logpTrain = SCRATCH.end;
  const logpInfer = logpTrain + tokenBytes;
  const offsets = logpInfer + tokenBytes;
  const advantages = offsets + alignUp(4 * (rollouts + 1));
  const tokenAdvantages = advantages + alignUp(8 * rollouts);
  const scratch = tokenAdvantages + tokenBytes;
  const bytes = scratch + alignUp(4 * scratchFloats);
  if (bytes > MAX_PAGES * PAGE)
    throw new RangeError(`tokens: ${tokens} tokens exceed WebAssembly's 4 GiB memory`);
  const reused = reusedKernel(bytes);
  if (reused) new Uint8Array(reused.buffer, reused.dataStart, bytes - reused.dataStart).fill(0);
  const buffer = (reused ?? instantiate(bytes))?.buffer ?? new ArrayBuffer(bytes);
  const views = {
    logpTrain: new Float32Array(buffer, logpTrain, tokens),
    logpInfer: new Float32Array(buffer, logpInfer, tokens),
    offsets: new Int32Array(buffer, offsets, rollouts + 1),
    advantages: new Float64Array(buffer, advantages, rollouts),
    tokenAdvantages: new Float32Array(buffer, tokenAdvantages, tokens),
    scratch: new Float32Array(buffer, scratch, scratchFloats),
  };
  handedOut.add(views.logpTrain);
  return views;
}

/** Gives a set createStepBuffers made back for reuse: none of its arrays may be read or written
 * after (the next batch's are the same memory). Releasing a set twice, or arrays it did not
 * make, throws. */
export function releaseStepBuffers(buffers: StepBuffers): void {
  if (!handedOut.delete(buffers.logpTrain)) {
    throw new Error(
      'releaseStepBuffers: these step buffers were already released, or not made by createStepBuffers',
    );
  }
  const kernel = kernelsByBuffer.get(buffers.logpTrain.buffer as ArrayBuffer);
  if (kernel === undefined) return; // no WebAssembly SIMD: an ordinary buffer, left to the GC
  released.push(kernel);
  if (released.length > MAX_RELEASED) {
    const smallest = released.reduce((a, b) => (b.buffer.byteLength < a.buffer.byteLength ? b : a));
    released.splice(released.indexOf(smallest), 1);
  }
}

/** The kernel whose memory holds all of `arrays` (clear of its scratch area), if any. */
export function zeroCopyKernel(arrays: readonly Float32Array[]): StepKernel | undefined {
  const kernel = arrays[0] && kernelsByBuffer.get(arrays[0].buffer as ArrayBuffer);
  if (kernel === undefined) return undefined;
  const inside = (a: Float32Array) =>
    a.buffer === kernel.buffer &&
    a.byteOffset >= kernel.dataStart &&
    a.byteOffset + a.byteLength + SLACK <= kernel.buffer.byteLength;
  return arrays.every(inside) ? kernel : undefined;
}

/** Staging views inside the shared kernel's memory: one slice of each logprob array. */
export interface StageArrays {
  logpTrain: Float32Array;
  logpInfer: Float32Array;
}

/** The shared kernel that stages arrays living elsewhere; null without WebAssembly SIMD. */
export function stagingKernelOf(): { kernel: StepKernel; stage: StageArrays } | null {
  if (stagingKernel !== undefined) return stagingKernel;
  const sliceBytes = alignUp(4 * STAGE_TOKENS + SLACK);
  const kernel = instantiate(SCRATCH.end + 2 * sliceBytes);
  if (kernel === null) return null;
  const view = (slice: number) =>
    new Float32Array(kernel.buffer, SCRATCH.end + slice * sliceBytes, STAGE_TOKENS);
  stagingKernel = {
    kernel,
    stage: { logpTrain: view(0), logpInfer: view(1) },
  };
  return stagingKernel;
}
