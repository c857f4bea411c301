// The part of the WebAssembly JS API the engines' kernels use (neither lib ES2023 nor
// @types/node 20 declares it), and compiling a kernel embedded as base64 (wasm/compile.ts): the
// JSON kernel (http/json-kernel.ts) and the tokenizer's decode kernel (tokenizers/decode-table.ts).
export interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
interface WasmApi {
  validate(bytes: Uint8Array): boolean;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: Record<string, unknown> };
}

const wasmApi = (globalThis as unknown as { WebAssembly?: WasmApi }).WebAssembly;

/** The module embedded as `base64`; null where this runtime has no WebAssembly, or cannot run
 * this module (validate() is false where the engine lacks a feature it uses, such as SIMD). */
export function compileEmbedded(base64: string): object | null {
  if (wasmApi === undefined) return null;
  const bytes = Uint8Array.from(Buffer.from(base64, 'base64'));
  return wasmApi.validate(bytes) ? new wasmApi.Module(bytes) : null;
}

/** A fresh instance of a compiled module (no imports), its exports as `T`. */
export function instantiate<T>(module: object): T {
  return new wasmApi!.Instance(module, {}).exports as unknown as T;
}
