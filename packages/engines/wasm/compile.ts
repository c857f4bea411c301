// Build-time only: the JSON kernel's .wat and the module generated from it (tools/wasm).
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
