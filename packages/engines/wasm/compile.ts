// Build-time only: the kernels' .wat files and the modules generated from them (tools/wasm).
import type { WasmKernel } from '@anneal/wasm-tools';

export const JSON_KERNEL: WasmKernel = {
  wat: new URL('./json-kernel.wat', import.meta.url),
  generated: new URL('../src/http/json-kernel-bytes.ts', import.meta.url),
  features: {},
  module: {
    prefix: 'JSON_KERNEL',
    command: 'npm run gen:wasm -w @anneal/engines',
    source: 'wasm/json-kernel.wat',
    what: 'The JSON kernel (src/http/json-kernel.ts) as base64; a test checks it matches the .wat.',
  },
};

export const DECODE_KERNEL: WasmKernel = {
  wat: new URL('./decode-kernel.wat', import.meta.url),
  generated: new URL('../src/tokenizers/decode-kernel-bytes.ts', import.meta.url),
  features: { simd: true },
  module: {
    prefix: 'DECODE_KERNEL',
    command: 'npm run gen:wasm -w @anneal/engines',
    source: 'wasm/decode-kernel.wat',
    what: "The tokenizer's decode kernel (src/tokenizers/decode-table.ts) as base64; a test checks it matches the .wat.",
  },
};
